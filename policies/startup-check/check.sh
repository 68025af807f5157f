#!/bin/sh
# gpu-startup-check: run as the first init container of a GPU pod, on the devices the pod was given.
#
# The init container requests the same GPU resources as the pod's app containers, so the kubelet's device
# manager hands it exactly the devices the app containers will reuse (kubernetes/kubernetes
# pkg/kubelet/cm/devicemanager/manager.go, Allocate + devicesToAllocate: "Allocates from reusableDevices
# list first"). nvidia-smi comes from the node's driver through the container toolkit's `utility` capability
# (NVIDIA/nvidia-container-toolkit pkg/nvcdi/driver-nvml.go), so no image of our own is needed.
#
# Verdicts (exit codes): 0 free (or skipped), 1 busy after every retry, 2 cannot check (no driver, no device).
# POSIX sh: runs under dash, bash and busybox sh. Settings (environment):
#   GPU_CHECK_POOLS    settings table, one line per pool (default /etc/gpu-startup-check/pools.conf):
#                      pool sharing product skip retries backoffSeconds maxMemoryUsedPercent sharePercent
#   GPU_CHECK_POOL     the pool's name, when known; otherwise the pool is found by the device's product
#   GPU_CHECK_RUNBOOK  the runbook page named in every failure
#   GPU_CHECK_SLEEP    the sleep command (tests replace it; default sleep)

POOLS_FILE=${GPU_CHECK_POOLS:-/etc/gpu-startup-check/pools.conf}
RUNBOOK=${GPU_CHECK_RUNBOOK:-runbooks/GPUStartupCheckFailed/}
SLEEP=${GPU_CHECK_SLEEP:-sleep}

# The fleet defaults (pool.yaml's schema defaults) until a device's pool is known.
SETTINGS="no pool line (fleet defaults)" SKIP=false RETRIES=3 BACKOFF=5 MAX_USED_PERCENT=5 SHARE_PERCENT=0

say() { printf 'gpu-startup-check: %s\n' "$*"; }

# The settings of the device's pool: the line naming GPU_CHECK_POOL when set, else the first line whose
# product stands as a word of the device name (or before a "-": A100-SXM4-80GB) and whose sharing agrees
# (mig for a MIG instance); rule POOL005 keeps every line of one product and sharing family equal, so which of
# them comes first does not matter. SETTINGS says whose they are. Without a line, the fleet defaults above.
# "$1": device name as nvidia-smi prints it, "$2": yes when the device is a MIG instance.
pick_settings() {
    SETTINGS="no pool line (fleet defaults)" SKIP=false RETRIES=3 BACKOFF=5 MAX_USED_PERCENT=5 SHARE_PERCENT=0
    [ -r "$POOLS_FILE" ] || return 0
    line=$(awk -v pool="${GPU_CHECK_POOL:-}" -v name=" $1 " -v mig="$2" '
        /^[ \t]*(#|$)/ { next }
        pool != "" { if ($1 == pool) { print; exit } ; next }
        (mig == "yes") == ($2 == "mig") {
            at = index(name, " " $3)
            if (at == 0) next
            after = substr(name, at + length($3) + 1, 1)
            if (after == " " || after == "-") { print; exit }
        }' "$POOLS_FILE")
    [ -n "$line" ] || return 0
    # shellcheck disable=SC2086 # the line is split into its fields on purpose
    set -- $line
    SKIP=$4 RETRIES=$5 BACKOFF=$6 MAX_USED_PERCENT=$7 SHARE_PERCENT=$8
    if [ -n "${GPU_CHECK_POOL:-}" ]; then SETTINGS="pool $1"; else SETTINGS="$3 $2 pools"; fi
}

# nvidia-smi, with its output in $SMI_OUT and its exit status returned.
smi() {
    SMI_OUT=$(nvidia-smi "$@" 2>&1)
}

# Reads the GPUs; on failure REASON says why. Sets GPUS (--query-gpu lines) and TABLE (plain nvidia-smi,
# read only when a GPU is in MIG mode: its "MIG devices" and "Processes" tables are the only per-instance
# figures nvidia-smi prints).
read_gpus() {
    if ! smi --query-gpu=index,uuid,name,mig.mode.current,memory.total,memory.used \
            --format=csv,noheader,nounits || [ -z "$SMI_OUT" ]; then
        REASON=" nvidia-smi cannot read the GPUs: $(printf '%s\n' "${SMI_OUT:-no device visible}" | head -n 1);"
        return 2
    fi
    GPUS=$SMI_OUT TABLE=
    case $GPUS in
        *Enabled*)
            smi || { REASON=" nvidia-smi cannot list the MIG devices: $(printf '%s\n' "$SMI_OUT" | head -n 1);"; return 2; }
            TABLE=$SMI_OUT ;;
    esac
    return 0
}

# One line per device the pod was given: id|name|mig(yes/no)|totalMiB|usedMiB. A GPU in MIG mode stands
# for its MIG devices (id GPU-uuid/gi<N>), read from the "MIG devices" rows: | GPU GI CI MIG | used / total |.
devices() {
    printf '%s\n' "$GPUS" | TABLE=$TABLE awk -F', *' '
        BEGIN {
            n = split(ENVIRON["TABLE"], rows, "\n")
            for (i = 1; i <= n; i++) {
                row = rows[i]
                if (row !~ /^\| +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +\| +[0-9]+MiB +\/ +[0-9]+MiB/) continue
                gsub(/[|\/]/, " ", row); gsub(/MiB/, "", row)
                split(row, f, " +")
                # f[2] gpu, f[3] gi, f[4] ci, f[5] mig device, f[6] used, f[7] total
                mig[f[2]] = mig[f[2]] f[3] ":" f[6] ":" f[7] ";"
            }
        }
        NF >= 6 && $4 == "Enabled" {
            k = split(mig[$1], parts, ";")
            for (j = 1; j < k; j++) {
                split(parts[j], p, ":")
                printf "%s/gi%s|%s MIG|yes|%s|%s\n", $2, p[1], $3, p[3], p[2]
            }
            next
        }
        NF >= 6 { printf "%s|%s|no|%s|%s\n", $2, $3, $5, $6 }'
}

# The compute processes nvidia-smi shows on a device, as "pid 42 (python, 1000 MiB)"; for a MIG device the
# rows of its GPU instance in the plain table's "Processes" section. Processes of other pods run in other
# PID namespaces and may be hidden from this one: the memory figure is the test, the holder a hint.
holders() {
    case $1 in
        */gi*)
            gi=${1##*/gi}
            printf '%s\n' "$TABLE" | awk -v gi="$gi" '
                /^\| +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[A-Z+]+ +.*MiB +\|$/ {
                    if ($3 != gi) next
                    mem = $(NF - 1); sub(/MiB/, "", mem)
                    out = out sep "pid " $5 " (" $7 ", " mem " MiB)"; sep = "; "
                }
                END { print out }' ;;
        *)
            smi --query-compute-apps=gpu_uuid,pid,process_name,used_memory --format=csv,noheader,nounits || return 0
            printf '%s\n' "$SMI_OUT" | awk -F', *' -v uuid="$1" '
                $1 == uuid { out = out sep "pid " $2 " (" $3 ", " $4 " MiB)"; sep = "; " }
                END { print out }' ;;
    esac
}

# One look at every device. REASON collects a sentence per busy device; returns 0 free, 1 busy, 2 cannot check.
check_once() {
    read_gpus || return 2
    REASON= busy=0 skipped=0 checked=0
    while IFS='|' read -r id name mig total used; do
        [ -n "$id" ] || continue
        pick_settings "$name" "$mig"
        if [ "$SKIP" = true ]; then skipped=$((skipped + 1)); continue; fi
        checked=$((checked + 1))
        case $total$used in
            *[!0-9]*|'') REASON="$REASON device $id ($name) does not report its memory;"; busy=1; continue ;;
        esac
        if [ "$SHARE_PERCENT" -gt 0 ]; then
            # Time-sliced: the share the pool declares for one replica must still be free.
            need=$((total * SHARE_PERCENT / 100)) free=$((total - used))
            [ "$free" -ge "$need" ] && continue
            what="$free MiB free of $total MiB, less than one replica's share, $SHARE_PERCENT% ($need MiB), on $SETTINGS"
        else
            limit=$((total * MAX_USED_PERCENT / 100))
            [ "$used" -le "$limit" ] && continue
            what="$used MiB of $total MiB in use, more than the $MAX_USED_PERCENT% ($limit MiB) allowed on $SETTINGS"
        fi
        held=$(holders "$id")
        REASON="$REASON device $id ($name): $what, held by ${held:-a process this pod cannot see};"
        busy=1
    done <<LIST
$(devices)
LIST
    if [ "$checked" -eq 0 ] && [ "$skipped" -eq 0 ]; then
        REASON=" nvidia-smi lists no device for this pod;"
        return 2
    fi
    return "$busy"
}

main() {
    attempt=0
    while :; do
        check_once
        verdict=$?
        if [ "$verdict" -eq 0 ]; then
            if [ "$checked" -eq 0 ]; then
                say "skipped: startupCheck.skip is set for $SETTINGS"
            else
                say "ok: $checked device(s) free (settings of $SETTINGS)"
            fi
            return 0
        fi
        [ "$attempt" -ge "$RETRIES" ] && break
        attempt=$((attempt + 1))
        say "attempt $attempt of $((RETRIES + 1)) failed:$REASON retrying in $((BACKOFF * attempt))s"
        $SLEEP $((BACKOFF * attempt))
    done
    if [ "$verdict" -eq 2 ]; then
        say "cannot check:$REASON runbook: $RUNBOOK"
        return 2
    else
        say "busy:$REASON runbook: $RUNBOOK"
    fi
    return 1
}

main
