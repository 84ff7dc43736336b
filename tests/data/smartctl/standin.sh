#!/bin/sh
# A smartctl stand-in for tests (daemon.smartctl = ".../standin.sh").
# Copy it into a directory with one DEVNAME.json per device (DEVNAME: the
# last path component of the device, e.g. loop3.json for /dev/loop3) and
# optionally DEVNAME.rc (the exit status to give; default 0). Every call
# appends its arguments to calls.log there. Unknown devices get smartctl's own answer for a device
# it cannot identify. DEVNAME.sleep makes it hang that many seconds first.
dir=$(dirname "$0")
dev=
for a in "$@"; do dev=$a; done
echo "$*" >> "$dir/calls.log"
name=$(basename "$dev")
[ -f "$dir/$name.sleep" ] && sleep "$(cat "$dir/$name.sleep")"
if [ -f "$dir/$name.json" ]; then
	cat "$dir/$name.json"
	[ -f "$dir/$name.rc" ] && exit "$(cat "$dir/$name.rc")"
	exit 0
fi
printf '{"json_format_version":[1,0],"smartctl":{"version":[7,3],"exit_status":1,"messages":[{"string":"%s: Unable to detect device type","severity":"error"}]}}\n' "$dev"
exit 1
