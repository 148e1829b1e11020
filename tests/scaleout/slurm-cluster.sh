# A single-node Slurm cluster for the scale-out tests, sourced by them:
# munged, slurmctld and slurmd of the Debian packages (munge, slurm-wlm),
# configured under a temporary folder, on ports nobody listens on, as the
# user running the test. `cluster_start DIR` starts it and waits until the
# node is idle; `cluster_stop` stops exactly the daemons it started, by
# their pids (never by name: other clusters or tests may run here).
#
# Settings, and why (slurm.conf(5) of Slurm 22.05; the Debian example
# /usr/share/doc/slurm-client/examples/slurm.conf.simple.gz is the base):
# proctrack/linuxproc and task/none track jobs by parent pid, so no cgroup
# is needed (none may be writable in a container); no accounting; the node
# is this host as `slurmd -C` sees it (its real CPUs and memory); the main
# scheduler every second rather than every minute, so that a dependent job
# starts as soon as its dependency ended.

CLUSTER_PIDS=""

# A TCP port nobody on this host listens on, other than those in $1.
free_port() {
    local used port
    used=$(ss -Htan 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')
    for _ in $(seq 1 200); do
        port=$((20000 + RANDOM % 30000))
        case " $1 $used " in
            *" $port "*) continue ;;
        esac
        echo "$port"
        return 0
    done
    return 1
}

# Print the reason the cluster cannot start here, if one.
cluster_missing() {
    local p
    for p in munged mungekey slurmctld slurmd sbatch squeue sinfo scontrol; do
        if ! command -v "$p" >/dev/null 2>&1; then
            echo "$p not found: install the Debian packages munge and slurm-wlm (build-aux/deps.sh)"
            return 0
        fi
    done
    return 1
}

# Wait until `$2...` succeeds, at most $1 seconds.
wait_for() {
    local deadline=$(($(date +%s) + $1))
    shift
    until "$@"; do
        [ "$(date +%s)" -lt "$deadline" ] || return 1
        sleep 0.5
    done
}

node_idle() {
    [ "$(sinfo -h -n "$CLUSTER_NODE" -o %t 2>/dev/null)" = idle ]
}

cluster_logs() {
    local f
    for f in "$CLUSTER_DIR"/log/*; do
        [ -f "$f" ] || continue
        echo "---- $f (last lines)"
        tail -n 20 "$f"
    done
}

cluster_start() {
    CLUSTER_DIR=$1
    local user node_line ctld_port slurmd_port
    user=$(id -un)
    CLUSTER_NODE=$(hostname -s)
    mkdir -p "$CLUSTER_DIR/munge" "$CLUSTER_DIR/state" "$CLUSTER_DIR/spool" "$CLUSTER_DIR/log" \
        "$CLUSTER_DIR/run"
    chmod 700 "$CLUSTER_DIR/munge"

    mungekey --create --keyfile="$CLUSTER_DIR/munge/munge.key" || return 1
    munged --foreground --force --key-file="$CLUSTER_DIR/munge/munge.key" \
        --socket="$CLUSTER_DIR/munge/munge.socket" --pid-file="$CLUSTER_DIR/run/munged.pid" \
        --log-file="$CLUSTER_DIR/log/munged.log" --seed-file="$CLUSTER_DIR/munge/munged.seed" \
        >"$CLUSTER_DIR/log/munged.out" 2>&1 &
    CLUSTER_PIDS="$CLUSTER_PIDS $!"
    wait_for 10 test -S "$CLUSTER_DIR/munge/munge.socket" || {
        echo "munged did not start"
        return 1
    }

    # `slurmd -C`: NodeName=... CPUs=... RealMemory=... of this host.
    node_line=$(slurmd -C | head -n 1)
    ctld_port=$(free_port "") || return 1
    slurmd_port=$(free_port "$ctld_port") || return 1
    export SLURM_CONF="$CLUSTER_DIR/slurm.conf"
    cat >"$SLURM_CONF" <<CONF
ClusterName=tpsimtest
SlurmctldHost=$CLUSTER_NODE
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
AuthInfo=socket=$CLUSTER_DIR/munge/munge.socket
CredType=cred/munge
SlurmUser=$user
SlurmdUser=$user
StateSaveLocation=$CLUSTER_DIR/state
SlurmdSpoolDir=$CLUSTER_DIR/spool
SlurmctldPidFile=$CLUSTER_DIR/run/slurmctld.pid
SlurmdPidFile=$CLUSTER_DIR/run/slurmd.pid
SlurmctldLogFile=$CLUSTER_DIR/log/slurmctld.log
SlurmdLogFile=$CLUSTER_DIR/log/slurmd.log
SlurmctldDebug=${CLUSTER_DEBUG:-info}
SlurmdDebug=${CLUSTER_DEBUG:-info}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SchedulerParameters=sched_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=300
$node_line State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF

    slurmctld -D -i >"$CLUSTER_DIR/log/slurmctld.out" 2>&1 &
    CLUSTER_PIDS="$CLUSTER_PIDS $!"
    slurmd -D >"$CLUSTER_DIR/log/slurmd.out" 2>&1 &
    CLUSTER_PIDS="$CLUSTER_PIDS $!"
    wait_for 30 node_idle || {
        echo "the node did not become idle in 30 s"
        sinfo 2>&1
        cluster_logs
        return 1
    }
}

cluster_stop() {
    local pid
    # slurmd first (its job steps end with it), then slurmctld, then munged.
    for pid in $(echo "$CLUSTER_PIDS" | tr ' ' '\n' | tac); do
        kill "$pid" 2>/dev/null
    done
    # Ten seconds to end cleanly, then SIGKILL.
    for pid in $CLUSTER_PIDS; do
        wait_for 10 eval "! kill -0 $pid 2>/dev/null" || kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
    done
    CLUSTER_PIDS=""
}
