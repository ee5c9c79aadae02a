#!/bin/sh
# The reins of a checkout: main.ts under the binary's sandbox (scripts/permissions.ts), built for
# this invocation from the command line as given (--home, --cwd, …), the config file's programs,
# the environment and the directory it is started in (scripts/invocation.ts). The launcher that
# `deno task install` puts on the PATH runs this; so does `deno task reins`.
#   sh scripts/reins.sh DENO [--init-cwd] ARGS…
# main.ts replaces this shell (exec): signals, exit codes and the terminal are reins's own.
deno=$1
shift
scripts=$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd) || exit 1
# `deno task reins` runs in the checkout: reins starts where the task was started.
if [ "${1-}" = "--init-cwd" ]; then
  shift
  cd "${INIT_CWD:-.}" || exit 1
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
