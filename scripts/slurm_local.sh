#!/bin/bash
# A single-node Slurm cluster on this machine, for the Slurm test (docs/nightly.md): munged with the key
# Debian's munge package generated, slurmctld and slurmd bound to localhost, every file under DIR.
# Needs root (scripts/setup.sh installs slurm-wlm and munge).
#
# usage: scripts/slurm_local.sh start DIR   (prints the SLURM_CONF line to use)
#        scripts/slurm_local.sh stop DIR
set -eu
action=${1:?usage: scripts/slurm_local.sh start|stop DIR} dir=${2:?usage: scripts/slurm_local.sh start|stop DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
conf="$dir/slurm.conf" host=$(hostname -s)
stop() {
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
    [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
  done
  sleep 1
  for pidfile in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munged.pid"; do
    [ -f "$pidfile" ] && kill -9 "$(cat "$pidfile")" 2>/dev/null || true
    rm -f "$pidfile"
  done
}
if [ "$action" = stop ]; then stop; exit 0; fi
[ "$action" = start ] || { echo "slurm_local: error: unknown action '$action'" >&2; exit 2; }
for tool in munged slurmctld slurmd sbatch; do
  command -v "$tool" > /dev/null || { echo "slurm_local: error: $tool not installed (scripts/setup.sh)" >&2; exit 2; }
done
mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
chown munge:munge "$dir/munge" 2>/dev/null || true
# munged: the package's key, its own socket under DIR (sbatch, slurmctld and slurmd find it through slurm.conf).
munged --socket="$dir/munge/munge.socket" --pid-file="$dir/munged.pid" --log-file="$dir/munged.log" \
  --seed-file="$dir/munge/munged.seed" --key-file=/etc/munge/munge.key --force
cat > "$conf" <<CONF
ClusterName=normcheck
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$conf"
slurmctld -f "$conf"
slurmd -f "$conf"
for _ in $(seq 1 60); do  # until the node takes jobs
  if sinfo -h -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then echo "SLURM_CONF=$conf"; exit 0; fi
  sleep 0.5
done
echo "slurm_local: error: the node did not come up; see $dir/slurmctld.log and $dir/slurmd.log" >&2
stop
exit 2
