# Runs a command with the variables of an environment file: the cron line that keeps the API
# key outside the clone (deploy/cron/drone-sync.cron, docs/schedules.md) calls it as
#
#   /bin/sh deploy/cron/with-env-file.sh ENV_FILE .venv/bin/drone-sync run --log-format json
#
# Why not `. ENV_FILE && ...` on the cron line itself: when the file is missing or cannot be
# read, /bin/sh's `.` ends the whole shell, before the line's `>> drone-sync.jsonl` applies to
# anything, so the log never hears of the failed tick and its last line still shows the
# previous run's success. Here that failure is written to stdout (which the cron line appends
# to the log) as drone-sync itself reports a configuration error: an `error` and a `summary`
# line, outcome `config_error`, exit code 2 (a person must fix the file; retrying will not).

env_file=${1:?usage: with-env-file.sh ENV_FILE COMMAND [ARGUMENTS...]}
shift

json_text() {
    # the text as a JSON string's content: backslashes and double quotes escaped
    printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g'
}

fail() {
    ts=$(date -u +%Y-%m-%dT%H:%M:%S.000+00:00)
    message=$(json_text "environment file $env_file $1: fix it (KEY=\"value\" lines, as in deploy/systemd/drone-sync.env.example), then run again")
    printf '{"event": "error", "ts": "%s", "kind": "configuration error", "message": "%s"}\n' \
        "$ts" "$message"
    printf '{"event": "summary", "ts": "%s", "outcome": "config_error", "exit_code": 2, "run_id": null, "tables": {}, "requests": 0, "retries": 0, "rows_written": 0, "issues": 0, "seconds": 0, "models": null, "error": "%s"}\n' \
        "$ts" "$message"
    exit 2
}

if [ ! -e "$env_file" ]; then
    fail "does not exist"
fi
if [ ! -f "$env_file" ] || [ ! -r "$env_file" ]; then
    fail "is not a file this user can read"
fi
# read once in a subshell first: a line /bin/sh cannot parse would end this shell too
if ! (set -a && . "$env_file") >/dev/null 2>&1; then
    fail "is not shell variable assignments /bin/sh can read"
fi
set -a
. "$env_file"
set +a
exec "$@"
