#!/usr/bin/env bash
# Installs the Debian 12 packages rtgt needs to build, test and benchmark,
# when any is missing. Quiet and quick when everything is there.
set -euo pipefail
pkgs=(build-essential pkg-config libconfig-dev liburing-dev libisal-dev libssl-dev
      libjson-c-dev libmicrohttpd-dev check libiscsi-dev libiscsi-bin tgt iperf3 iproute2 gnuplot-nox python3
      tmux fio             # rtgtctl top's check under tmux; scripts/initiator/run-fio.sh
      smartmontools curl   # member health (daemon.smartctl); test_net_events scrapes metrics
      mandoc               # tests/unit/test_man.py: mandoc -Tlint of the manual pages
      clang libclang-rt-dev    # clang + libFuzzer runtime: make fuzz
      librbd-dev librados-dev ceph-mon ceph-mgr ceph-osd ceph-common   # rbd pools + scripts/ceph-cluster.sh
      debhelper lintian    # make deb, tests/pkg/test_pkg_deb.sh
      prometheus python3-yaml)   # promtool for target/daemon/monitoring/ (tests/unit/test_monitoring.py)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian's tgt package enables and starts tgtd on port 3260 where systemd
# runs; rtgt needs it only as a program for scripts/bench-vs-tgt.sh, which
# starts its own on another port. Stop the one we just installed so that
# `make run` finds 3260 free.
if [[ " ${missing[*]} " == *" tgt "* ]] && [ -d /run/systemd/system ]; then
	echo "deps: stopping and disabling the tgt service just installed (it would hold port 3260)" >&2
	$SUDO systemctl disable --now tgt.service >/dev/null 2>&1 || true
fi
# Debian's prometheus package (wanted for promtool only) enables and starts
# a Prometheus server on port 9090 where systemd runs: stop the one just
# installed, nothing here needs it running.
if [[ " ${missing[*]} " == *" prometheus "* ]] && [ -d /run/systemd/system ]; then
	echo "deps: stopping and disabling the prometheus service just installed (only promtool is used)" >&2
	$SUDO systemctl disable --now prometheus.service >/dev/null 2>&1 || true
fi
