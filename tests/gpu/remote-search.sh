#!/bin/bash
# Searches on a GPU host through workers placed elsewhere: every GPU of the host (--devices all),
# workers over SSH to an sshd on 127.0.0.1 that this script starts with keys made for it, and SSH
# with --devices all (one pool per GPU of the remote host, pinned there). Uses the folder staged by
# tests/gpu/stage-headless.sh and, where the host has no OpenSSH, the one staged by
# tests/gpu/stage-openssh.sh.
#   OUT=results BUDGET=16 tests/gpu/remote-search.sh     (ONLY_SSH=1: the SSH searches alone)
# Run by root on a host without openssh-server, it makes the system user sshd that sshd needs.
# Prints each run's summary and where its evaluations ran (host, device index, model).
set -u
headless=$(readlink -f "${KFORGE_HEADLESS:-.gpu/headless}")
openssh=$(readlink -f "${KFORGE_OPENSSH:-.gpu/openssh}")
out=$(readlink -f "${OUT:-/tmp/kforge-remote}")
budget=${BUDGET:-16}
task=${TASK:-vector_add}
mkdir -p "$out"
chmod 700 "$out"
export LD_LIBRARY_PATH="$headless/lib:${LD_LIBRARY_PATH:-}"
export KFORGE_TASKS_DIR="$PWD/tasks" KFORGE_RESOURCES_DIR="$PWD/resources" KFORGE_WORKER_DIR="$headless/bin"
[ -x "$openssh/bin/ssh" ] && export PATH="$openssh/bin:$PATH"

where() { # the evaluations of the newest run in store $1: host, device index, model, count
    python3 - "$1" <<'PY'
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = {}
for device, result in db.execute("SELECT device, result_json FROM evaluations WHERE run_id = (SELECT MAX(id) FROM runs)"):
    r = json.loads(result)
    key = (r.get("host", "?"), r.get("device_index", "?"), device or "(none)", r.get("status", "?"))
    rows[key] = rows.get(key, 0) + 1
for (host, index, model, status), n in sorted(rows.items(), key=str):
    print(f"  {n:3d} evaluations  host={host} device_index={index} model={model} status={status}")
PY
}

search() { # name, then extra arguments for kforge run
    local name=$1
    shift
    echo "== $name: kforge run --task $task --backend cuda $*"
    "$headless/bin/kforge-headless" run --task "$task" --backend cuda --variant small --budget-evals "$budget" \
        --islands 2 --children 4 --no-pytorch --no-experience --db "$out/$name.kforge" --json "$@" \
        > "$out/$name.json" 2> "$out/$name.log"
    echo "exit $?: $(python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print(s["state"], s["evaluations"], "evaluations, best speedup", s["best_speedup"], "over", s["speedup_base"], s.get("message", ""))' "$out/$name.json" 2>&1)"
    grep -i "left out\|notice\|error" "$out/$name.log" | head -5
    where "$out/$name.kforge"
}

[ -z "${ONLY_SSH:-}" ] && search devices-all --devices all --workers 2

# An sshd on 127.0.0.1 with its own host key and a client key made for this run.
if ! command -v sshd > /dev/null 2>&1 && [ ! -x "$openssh/bin/sshd" ]; then
    echo "== ssh: not run: no sshd here and none staged (tests/gpu/stage-openssh.sh)"
    exit 0
fi
sshd_bin=$(command -v sshd || echo "$openssh/bin/sshd")
rm -f "$out/host_key" "$out/client_key"*
ssh-keygen -q -t ed25519 -N '' -f "$out/host_key"
ssh-keygen -q -t ed25519 -N '' -f "$out/client_key"
cp "$out/client_key.pub" "$out/authorized_keys"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat > "$out/sshd_config" <<CONFIG
Port $port
ListenAddress 127.0.0.1
HostKey $out/host_key
AuthorizedKeysFile $out/authorized_keys
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PidFile $out/sshd.pid
CONFIG
if [ "$(id -u)" = 0 ]; then
    # sshd run by root separates privileges through the user "sshd", which a host without
    # openssh-server lacks: made here as openssh-server's installation would make it.
    mkdir -p /run/sshd
    if ! id sshd > /dev/null 2>&1; then
        useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd \
            && echo "== made the system user sshd (privilege separation)"
    fi
fi
"$sshd_bin" -D -e -f "$out/sshd_config" 2> "$out/sshd.log" &
sshd=$!
export KFORGE_SSH_ARGS="-i $out/client_key -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
up=
for _ in $(seq 50); do
    if ssh $KFORGE_SSH_ARGS -o BatchMode=yes -p "$port" 127.0.0.1 true 2> "$out/ssh-check.log"; then
        up=1
        break
    fi
    sleep 0.2
done
if [ -z "$up" ]; then
    echo "== ssh: sshd did not accept a connection: $(tail -3 "$out/sshd.log") $(tail -2 "$out/ssh-check.log")"
    kill "$sshd" 2> /dev/null
    exit 0
fi
echo "== sshd $("$sshd_bin" -V 2>&1 | head -1) on 127.0.0.1:$port (pid $sshd, user $(id -un))"
place="ssh://127.0.0.1:$port$headless/bin/kforge-worker-cuda.sh"
search ssh --worker "$place" --workers 2
search ssh-devices-all --worker "$place" --devices all --workers 2
kill "$sshd" 2> /dev/null
wait "$sshd" 2> /dev/null
