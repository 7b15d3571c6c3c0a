#!/usr/bin/env bash
# Provision and start the local lab on this machine (see lab.md in the shared design docs).
#
#   scripts/lab.sh          install packages, locales, start MariaDB, create users and sysbench tables,
#                           then a health check; idempotent (safe to re-run)
#   scripts/lab.sh stop     stop what this script started (MariaDB, by pid file)
#
# Debian 12 as root, no systemd. State lives in LAB=${PERFKIT_LAB:-/var/lib/perfkit-lab} (0700):
# $LAB/sb.cfg (0600) is the sysbench --config-file holding the lab password. The password is
# generated once per lab and never appears in any process's argv (SQL goes to mariadb on stdin).
set -euo pipefail

LAB=${PERFKIT_LAB:-/var/lib/perfkit-lab}
CFG=$LAB/sb.cfg
PIDFILE=/run/mysqld/ssd.pid
MARIADBD=/usr/sbin/mariadbd
PACKAGES=(mariadb-server sysbench sysstat iotop numactl fio iftop openssh-server locales chromium linux-perf percona-toolkit nftables)
LOCALES=(en_US.UTF-8 de_DE.UTF-8 zh_CN.UTF-8)
DATABASES=(sbtest tpcc ycsb)
SB_TABLES=2
SB_TABLE_SIZE=10000

say() { printf '[lab] %s\n' "$*"; }
die() {
    printf '[lab] FAILED: %s\n' "$*" >&2
    exit 1
}

# ------------------------------------------------------------------ 1. packages
install_packages() {
    local missing=() pkg attempt
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    if ((${#missing[@]} == 0)); then
        say "packages: all ${#PACKAGES[@]} present, skipping apt"
        return
    fi
    say "packages: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    for attempt in 1 2 3; do
        if apt-get update -q -o DPkg::Lock::Timeout=120 &&
            apt-get install -y -q -o DPkg::Lock::Timeout=120 "${missing[@]}"; then
            return
        fi
        ((attempt < 3)) || break
        say "apt attempt $attempt failed (lock held or half-finished unpack?); retrying in 5 s"
        sleep 5
    done
    die "apt-get install ${missing[*]} failed 3 times"
}

# ------------------------------------------------------------------ 2. locales
setup_locales() {
    local missing=() loc
    for loc in "${LOCALES[@]}"; do
        locale -a 2>/dev/null | grep -qix "${loc%%.*}.utf8" || missing+=("$loc")
    done
    if ((${#missing[@]} == 0)); then
        say "locales: ${LOCALES[*]} present"
        return
    fi
    say "locales: generating ${missing[*]}"
    for loc in "${missing[@]}"; do
        # uncomment "# de_DE.UTF-8 UTF-8", or append it when the line is absent
        sed -i "s/^#[[:space:]]*\(${loc//./\\.} UTF-8\)/\1/" /etc/locale.gen
        grep -q "^${loc//./\\.} UTF-8" /etc/locale.gen || echo "$loc UTF-8" >>/etc/locale.gen
    done
    locale-gen >/dev/null || die "locale-gen failed"
    for loc in "${missing[@]}"; do
        locale -a | grep -qix "${loc%%.*}.utf8" || die "locale $loc still missing after locale-gen"
    done
}

# ------------------------------------------------------------------ 3. MariaDB
start_mariadb() {
    if mariadb-admin ping >/dev/null 2>&1; then
        say "mariadb: already running"
        return
    fi
    say "mariadb: starting $MARIADBD (max-connections 512, pid file $PIDFILE)"
    mkdir -p /run/mysqld /var/log/mysql
    chown mysql:root /run/mysqld
    chown mysql:adm /var/log/mysql
    start-stop-daemon --start --oknodo --background --make-pidfile --pidfile "$PIDFILE" \
        --exec "$MARIADBD" -- --user=mysql --log-error=/var/log/mysql/error.log --max-connections=512
    local i
    for ((i = 0; i < 300; i++)); do # 300 x 0.1 s = 30 s
        if mariadb-admin ping >/dev/null 2>&1; then
            say "mariadb: answering ping after ~$((i / 10)).$((i % 10)) s"
            return
        fi
        sleep 0.1
    done
    tail -n 20 /var/log/mysql/error.log >&2 2>/dev/null || true
    die "mariadb did not answer 'mariadb-admin ping' within 30 s (log: /var/log/mysql/error.log)"
}

stop_mariadb() {
    if [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
        say "mariadb: stopping pid $(cat "$PIDFILE")"
        start-stop-daemon --stop --pidfile "$PIDFILE" --exec "$MARIADBD" --retry TERM/30/KILL/5 --remove-pidfile ||
            die "could not stop mariadb (pid file $PIDFILE)"
        say "mariadb: stopped"
    else
        say "mariadb: not running from $PIDFILE (nothing to stop)"
        rm -f "$PIDFILE"
    fi
}

# ------------------------------------------------------------------ 4. users, databases, sb.cfg
lab_password() {
    # prints nothing; sets PW. Reuse the password of an existing sb.cfg, else generate and store one.
    umask 077
    mkdir -p "$LAB"
    chmod 0700 "$LAB"
    if [[ -f $CFG ]]; then
        PW=$(sed -n 's/^mysql-password=//p' "$CFG")
        [[ -n $PW ]] || die "$CFG has no mysql-password= line; remove it to generate a new one"
        chmod 0600 "$CFG"
        say "credentials: reusing the password in $CFG"
        return
    fi
    PW=pk$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    printf '%s\n' db-driver=mysql mysql-host=127.0.0.1 mysql-port=3306 mysql-user=perfkit \
        "mysql-password=$PW" mysql-db=sbtest >"$CFG.tmp" # printf is a builtin: PW not in argv
    chmod 0600 "$CFG.tmp"
    mv "$CFG.tmp" "$CFG"
    say "credentials: generated a new password into $CFG (0600)"
}

create_users() {
    say "mariadb: databases ${DATABASES[*]}, users perfkit@127.0.0.1 and perfkit@localhost (grants re-applied)"
    local db host
    {
        for db in "${DATABASES[@]}"; do echo "CREATE DATABASE IF NOT EXISTS $db;"; done
        for host in 127.0.0.1 localhost; do
            echo "CREATE USER IF NOT EXISTS 'perfkit'@'$host' IDENTIFIED BY '$PW';"
            echo "ALTER USER 'perfkit'@'$host' IDENTIFIED BY '$PW';"
            for db in "${DATABASES[@]}"; do echo "GRANT ALL ON $db.* TO 'perfkit'@'$host';"; done
        done
    } | mariadb || die "creating databases/users failed"
}

# ------------------------------------------------------------------ 5. sysbench tables
prepare_sysbench() {
    local have rows=0
    have=$(mariadb -N -B -e "SELECT COUNT(*) FROM information_schema.tables
        WHERE table_schema='sbtest' AND table_name REGEXP '^sbtest[0-9]+\$'") ||
        die "cannot list the sbtest tables"
    if ((have == SB_TABLES)); then
        rows=$(mariadb -N -B -e "SELECT COUNT(*) FROM sbtest.sbtest$SB_TABLES") || die "cannot count sbtest rows"
    fi
    if ((have == SB_TABLES && rows == SB_TABLE_SIZE)); then
        say "sysbench: sbtest has $SB_TABLES tables of $SB_TABLE_SIZE rows, skipping prepare"
        return
    fi
    if ((have > 0)); then
        # cleanup drops sbtest1..N: N is the highest number present (sbtest2 alone needs N=2)
        local last
        last=$(mariadb -N -B -e "SELECT MAX(CAST(SUBSTRING(table_name, 7) AS UNSIGNED))
            FROM information_schema.tables WHERE table_schema='sbtest'
            AND table_name REGEXP '^sbtest[0-9]+\$'") || die "cannot list the sbtest tables"
        say "sysbench: sbtest holds $have table(s) up to sbtest$last, last one $rows rows: cleanup before prepare"
        timeout 60 sysbench oltp_read_write --config-file="$CFG" --tables="$last" cleanup >/dev/null ||
            die "sysbench cleanup failed"
    fi
    say "sysbench: prepare $SB_TABLES tables x $SB_TABLE_SIZE rows"
    timeout 120 sysbench oltp_read_write --config-file="$CFG" --tables=$SB_TABLES \
        --table-size=$SB_TABLE_SIZE prepare >/dev/null || die "sysbench prepare failed"
}

# ------------------------------------------------------------------ 6. a plain login user
# The tests start their own sshd instances (tests/sshd.py). sshd sends signals (Ctrl-C, kill) only to
# the sessions of non-root users, and root's heavy login files slow every exec: a plain `perfkit`
# user, unlocked for key logins under `UsePAM no` (lab.md §3: `usermod -p '*'`).
create_login_user() {
    if ! id perfkit >/dev/null 2>&1; then
        useradd --create-home --shell /bin/bash perfkit || die "useradd perfkit failed"
        say "user: created perfkit"
    fi
    usermod -p '*' perfkit || die "usermod -p '*' perfkit failed"
}

# ------------------------------------------------------------------ 7. health check
health_check() {
    local out
    out=$(timeout 30 sysbench oltp_point_select --config-file="$CFG" --tables=$SB_TABLES \
        --table-size=$SB_TABLE_SIZE --threads=1 --time=1 run 2>&1) ||
        die "health check: sysbench oltp_point_select failed: $(grep -m1 FATAL <<<"$out" || echo "${out##*$'\n'}")"
    grep -q 'transactions:' <<<"$out" || die "health check: no sysbench summary in the output"
    say "health: sysbench oltp_point_select ok ($(grep -m1 'transactions:' <<<"$out" | tr -s ' ' | sed 's/^ //'))"
}

main() {
    [[ $(id -u) == 0 ]] || die "run as root (apt, locale-gen, start-stop-daemon)"
    local t0=$SECONDS
    case ${1:-start} in
    start)
        install_packages
        setup_locales
        start_mariadb
        lab_password
        create_users
        prepare_sysbench
        create_login_user
        health_check
        say "ready in $((SECONDS - t0)) s (config: $CFG)"
        ;;
    stop)
        stop_mariadb
        ;;
    *)
        die "usage: $0 [start|stop]"
        ;;
    esac
}

main "$@"
