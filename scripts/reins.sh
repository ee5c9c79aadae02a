#!/bin/sh
# The reins of a checkout: main.ts under the binary's sandbox (scripts/permissions.ts), built for
# this invocation from the command line as given (--home, --cwd, …), the config file's programs,
# the environment and the directory it is started in (scripts/invocation.ts). The launcher that
# `deno task install` puts on the PATH runs this; so does `deno task reins`.
#   sh scripts/reins.sh DENO ARGS…     (the installed launcher: DENO is an absolute path)
#   sh scripts/reins.sh --task ARGS…   (`deno task reins`: the Deno running the task)
# main.ts replaces this shell (exec): signals, exit codes and the terminal are reins's own.
scripts=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd) || exit 1
if [ "${1-}" = "--task" ]; then
  shift
  # `deno task` starts this shell itself, so the Deno to run is its parent's program: a `deno` on
  # PATH may be another version, or missing (a machine with Deno only from npm).
  deno=$(readlink "/proc/$PPID/exe" 2>/dev/null) || deno=
  case $deno in
  */deno | */deno.exe) ;;
  *) deno=$(ps -o comm= -p "$PPID" 2>/dev/null) || deno= ;;
  esac
  case $deno in
  /*/deno | /*/deno.exe) ;;
  *)
    echo "scripts/reins.sh --task: cannot tell which Deno runs this task (pid $PPID)" >&2
    echo "hint: run it as \`deno task reins …\`, or install reins with \`deno task install\`" >&2
    exit 1
    ;;
  esac
  # `deno task reins` runs in the checkout: reins starts where the task was started.
  cd "${INIT_CWD:-.}" || exit 1
else
  deno=$1
  shift
fi
repo=${scripts%/scripts}
nl='
'
out=$(DENO_NO_UPDATE_CHECK=1 "$deno" run --quiet --allow-all --no-prompt \
  --config "$repo/deno.json" "$scripts/sandbox_flags.ts" "$@") || exit $?
REINS_SANDBOX=${out%%"$nl"*}
flags=${out#*"$nl"}
DENO_NO_UPDATE_CHECK=1
export REINS_SANDBOX DENO_NO_UPDATE_CHECK
# One flag a line: split on newlines only, and never glob.
IFS=$nl
set -f
# shellcheck disable=SC2086
exec "$deno" run --quiet --config "$repo/deno.json" $flags "$repo/main.ts" "$@"
