# bash completion for rtgtctl (target/tools/rtgtctl.c), installed as
# share/bash-completion/completions/rtgtctl; or `source` it.
#
# rtgtctl <Tab> gives the commands, -<Tab> the options (those of the
# command given so far too); the pool, member, target and LUN arguments
# are asked from the running daemon with one `rtgtctl stats --json` (on the
# -s / -c of the line being completed, else rtgtctl's own default), given
# at most a second, its errors dropped: no daemon, no names, no noise.
# Members are offered by path, only those the command takes (fail: active
# or rebuilding ones, replace: active ones, remove: faulty and spare ones).
# Volume, snapshot and clone names come from one `rtgtctl volume list POOL
# --json` the same way: thin volumes for snapshot, snapshots for clone,
# rollback and snapshot delete, clones for volume inflate.

_rtgtctl_cmds="status stats sessions top paths events reload fail add-spare replace remove grow convert scrub resize volume snapshot clone rollback check"

# "key<TAB>value" for every string of a JSON document on stdin, the key the
# path to it ("pools.0.members.1.path"); enough JSON for rtgtctl's replies
# (string escapes are kept as they are).
_rtgtctl_flatten()
{
	awk 'BEGIN { RS = "\001" }
	function path(   p, l) {
		p = ""
		for (l = 1; l <= d; l++)
			p = p "." (typ[l] == "[" ? idx[l] : key[l])
		return substr(p, 2)
	}
	{
		s = $0; n = length(s); i = 1; d = 0
		while (i <= n) {
			c = substr(s, i, 1)
			if (c == "{" || c == "[") {
				d++; typ[d] = c; idx[d] = 0; key[d] = ""
			} else if (c == "}" || c == "]") {
				d--
			} else if (c == "," && typ[d] == "[") {
				idx[d]++
			} else if (c == "\"") {
				v = ""
				for (i++; i <= n; i++) {
					c = substr(s, i, 1)
					if (c == "\\") { v = v substr(s, i, 2); i++; continue }
					if (c == "\"") break
					v = v c
				}
				j = i + 1
				while (substr(s, j, 1) == " ") j++
				if (substr(s, j, 1) == ":") key[d] = v
				else print path() "\t" v
			}
			i++
		}
	}'
}

# The daemon's names: _rtgtctl_ask CTL [SOCKET-OPTION VALUE] -> flattened
# `stats --json`, nothing when it does not answer within a second.
_rtgtctl_ask()
{
	local ctl=$1
	shift
	timeout 1 "$ctl" "$@" stats --json 2> /dev/null < /dev/null | _rtgtctl_flatten
}

# names of pool $3's volumes whose type matches the regex $2 (and, with
# $4 set, that have an origin: clones), from `volume list POOL --json`
_rtgtctl_vols()
{
	local ctl=$1 want=$2 pool=$3 clones=${4:-}
	shift 4
	timeout 1 "$ctl" "$@" volume list "$pool" --json 2> /dev/null < /dev/null |
		_rtgtctl_flatten |
		awk -F '\t' -v want="^($want)\$" -v clones="$clones" '
			$1 ~ /^volumes\.[0-9]+\.name$/ { split($1, k, "."); name[k[2]] = $2 }
			$1 ~ /^volumes\.[0-9]+\.type$/ { split($1, k, "."); type[k[2]] = $2 }
			$1 ~ /^volumes\.[0-9]+\.origin$/ { split($1, k, "."); origin[k[2]] = $2 }
			END { for (i in name) if (type[i] ~ want && (!clones || origin[i] != "")) print name[i] }'
}

# pool names
_rtgtctl_pools()
{
	awk -F '\t' '$1 ~ /^pools\.[0-9]+\.name$/ { print $2 }' <<< "$1"
}

# member paths of pool $2 whose state matches the regex $3
_rtgtctl_members()
{
	awk -F '\t' -v pool="$2" -v want="^($3)\$" '
		$1 ~ /^pools\.[0-9]+\.name$/ { split($1, k, "."); name[k[2]] = $2 }
		$1 ~ /^pools\.[0-9]+\.members\.[0-9]+\.path$/ { split($1, k, "."); path[k[2] "." k[4]] = $2; pi[k[2] "." k[4]] = k[2] }
		$1 ~ /^pools\.[0-9]+\.members\.[0-9]+\.state$/ { split($1, k, "."); state[k[2] "." k[4]] = $2 }
		END { for (m in path) if (name[pi[m]] == pool && state[m] ~ want) print path[m] }' <<< "$1"
}

# target IQNs
_rtgtctl_targets()
{
	awk -F '\t' '$1 ~ /^targets\.[0-9]+\.iqn$/ { print $2 }' <<< "$1"
}

# LUN numbers target $2 exports ("IQN/LUN" in luns[].exported_as)
_rtgtctl_luns()
{
	awk -F '\t' -v t="$2" '$1 ~ /^luns\.[0-9]+\.exported_as\.[0-9]+$/ && index($2, t "/") == 1 {
		print substr($2, length(t) + 2)
	}' <<< "$1"
}

# paths starting with $1; readline quotes them and marks directories
# (compopt exists only inside a completion, hence the silence)
_rtgtctl_files()
{
	compopt -o filenames 2> /dev/null
	mapfile -t COMPREPLY < <(compgen -f -- "$1")
}

_rtgtctl()
{
	local -a words=() pos=() sock=()
	local i w cur prev cmd ctl names opts state
	# bash splits "iqn.2026-11.org.rtgt:tank" at the colon
	# (COMP_WORDBREAKS): join the pieces back, completing the whole word
	for ((i = 0; i <= COMP_CWORD && i < ${#COMP_WORDS[@]}; i++)); do
		w=${COMP_WORDS[i]}
		if ((${#words[@]} > 1)) && { [[ $w == : ]] || [[ ${words[-1]} == *: ]]; }; then
			words[-1]+=$w
		else
			words+=("$w")
		fi
	done
	((COMP_CWORD < ${#COMP_WORDS[@]})) || words+=("")
	cur=${words[-1]}
	prev=
	((${#words[@]} > 1)) && prev=${words[-2]}
	COMPREPLY=()

	for ((i = 1; i < ${#words[@]} - 1; i++)); do
		w=${words[i]}
		case $w in
		-s | --socket) sock=(-s "${words[i + 1]}"); ((i++)) ;;
		-c | --config) sock=(-c "${words[i + 1]}"); ((i++)) ;;
		-a | --add | -w | --watch | -i | --interval | -n | --count) ((i++)) ;;
		--socket=*) sock=(-s "${w#*=}") ;;
		--config=*) sock=(-c "${w#*=}") ;;
		--*) ;;
		-s?*) sock=(-s "${w#-s}") ;;
		-c?*) sock=(-c "${w#-c}") ;;
		-?*) ;;
		*) pos+=("$w") ;;
		esac
	done
	# the value of an option
	case $prev in
	-s | --socket | -c | --config | -a | --add)
		_rtgtctl_files "$cur"
		return 0 ;;
	-w | --watch | -i | --interval | -n | --count)
		return 0 ;;
	esac
	cmd=${pos[0]:-}
	if [[ $cur == -* ]]; then
		opts="-s --socket -c --config --json -h --help"
		case $cmd in
		stats) opts+=" --watch --count" ;;
		top) opts+=" --interval --count" ;;
		paths) opts+=" --interval" ;;
		events) opts+=" --follow" ;;
		scrub) opts+=" --repair" ;;
		grow | convert) opts+=" --add" ;;
		volume) opts+=" --thin" ;;
		rollback) opts+=" --force" ;;
		esac
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
		return 0
	fi
	if [[ -z $cmd ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$_rtgtctl_cmds" -- "$cur")
		return 0
	fi
	# argument ${#pos[@]} of $cmd (1 = the first)
	case $cmd:${#pos[@]} in
	add-spare:2)
		_rtgtctl_files "$cur"
		return 0 ;;
	convert:2)
		mapfile -t COMPREPLY < <(compgen -W "raid5 raid6" -- "$cur")
		return 0 ;;
	volume:1)
		mapfile -t COMPREPLY < <(compgen -W "list create delete inflate" -- "$cur")
		return 0 ;;
	volume:2 | snapshot:1 | clone:1 | rollback:1 | check:1 | snapshot:2 | snapshot:3 | \
	clone:2 | rollback:2 | volume:3) ;;
	fail:1 | replace:1 | remove:1 | add-spare:1 | grow:1 | convert:1 | scrub:1 | \
	fail:2 | replace:2 | remove:2 | resize:1 | resize:2) ;;
	*) return 0 ;;
	esac
	ctl=${words[0]}
	[[ $ctl == */* && -x $ctl ]] || ctl=rtgtctl
	# volume names: argument 2 of clone/rollback/snapshot, 3 of volume and
	# snapshot delete (the pool is the argument before)
	w=
	case $cmd:${#pos[@]}:${pos[1]:-} in
	volume:3:delete) w=$(_rtgtctl_vols "$ctl" "thin|thick" "${pos[2]}" "" "${sock[@]}") ;;
	volume:3:inflate) w=$(_rtgtctl_vols "$ctl" "thin" "${pos[2]}" 1 "${sock[@]}") ;;
	volume:3:*) return 0 ;;
	snapshot:3:delete) w=$(_rtgtctl_vols "$ctl" "snapshot" "${pos[2]}" "" "${sock[@]}") ;;
	snapshot:3:*) return 0 ;;
	snapshot:2:delete) ;;
	snapshot:2:*) w=$(_rtgtctl_vols "$ctl" "thin" "${pos[1]}" "" "${sock[@]}") ;;
	clone:2:* | rollback:2:*) w=$(_rtgtctl_vols "$ctl" "snapshot" "${pos[1]}" "" "${sock[@]}") ;;
	esac
	if [[ -n $w ]]; then
		local IFS=$'\n'
		mapfile -t COMPREPLY < <(compgen -W "$w" -- "$cur")
		return 0
	fi
	case $cmd:${#pos[@]}:${pos[1]:-} in
	volume:3:* | snapshot:3:* | clone:2:* | rollback:2:* | snapshot:2:[!d]* | snapshot:2:d[!e]*)
		return 0 ;;
	esac
	names=$(_rtgtctl_ask "$ctl" "${sock[@]}")
	[[ -n $names ]] || return 0
	case $cmd:${#pos[@]} in
	resize:1) w=$(_rtgtctl_targets "$names") ;;
	resize:2) w=$(_rtgtctl_luns "$names" "${pos[1]}") ;;
	snapshot:1) w=$(_rtgtctl_pools "$names"; echo delete) ;;
	*:1 | volume:2 | snapshot:2) w=$(_rtgtctl_pools "$names") ;;
	*:2)
		case $cmd in
		fail) state="active|rebuilding|replacing" ;;
		replace) state="active" ;;
		remove) state="faulty|spare" ;;
		esac
		w=$(_rtgtctl_members "$names" "${pos[1]}" "$state") ;;
	esac
	local IFS=$'\n'
	mapfile -t COMPREPLY < <(compgen -W "$w" -- "$cur")
	# bash replaces only what follows the last colon of the word
	if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
		for i in "${!COMPREPLY[@]}"; do
			COMPREPLY[i]=${COMPREPLY[i]#"${cur%:*}":}
		done
	fi
	return 0
}

complete -F _rtgtctl rtgtctl
