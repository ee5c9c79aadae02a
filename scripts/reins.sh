#!/bin/sh
# The reins of a checkout: main.ts under the binary's sandbox (scripts/permissions.ts), built for
# this invocation from the command line as given (--home, --cwd, a suite file, …), the config
# file's programs, the environment and the directory it is started in (scripts/invocation.ts).
# Building it takes a Deno of its own (sandbox_flags.ts), so the flags are cached
# (scripts/launcher_cache.ts): a start like one seen before starts Deno once, for main.ts.
#   set -- --launcher DENO CHECKOUT ARGS…; . scripts/reins.sh
#                                      (the launcher `deno task install` writes, which reads this
#                                       file rather than start another shell; both absolute)
#   sh scripts/reins.sh DENO ARGS…     (DENO an absolute path: the launchers of older installs)
#   sh scripts/reins.sh --task ARGS…   (`deno task reins`: the Deno running the task)
# main.ts replaces this shell (exec): signals, exit codes and the terminal are reins's own.
if [ "${1-}" = "--launcher" ]; then
  deno=$2 repo=$3
  shift 3
else
  repo=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd) || exit 1
  if [ "${1-}" = "--task" ]; then
    shift
    # `deno task` starts this shell itself, so the Deno to run is its parent's program: a `deno`
    # on PATH may be another version, or missing (a machine with Deno only from npm).
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
fi
nl='
'
DENO_NO_UPDATE_CHECK=1
export DENO_NO_UPDATE_CHECK
if ! cd -P . 2>/dev/null; then
  echo "reins: cannot start in a directory that is gone (or that this user may not enter)" >&2
  echo "hint: cd to a directory that exists and run reins again" >&2
  exit 6
fi
start=$PWD

# What the flags are computed from, so what the cache is keyed on (invocation.ts's SANDBOX_ENV and
# VALUE_FLAGS, and the static imports of sandbox_flags.ts), and the --allow-env every sandbox has
# (ENV_VARS of lib/core/env.ts): tests/scripts/launcher_cache_test.ts holds each to its source.
sandbox_env='HOME REINS_HOME REINS_CONFIG REINS_CLAUDE_BIN REINS_CODEX_BIN REINS_GEMINI_BIN
REINS_OPENCODE_BIN REINS_ALLOW_RUN REINS_ALLOW_NET HARNESS_PLATFORM_URL FI_BASE_URL OPENAI_BASE_URL
OTEL_EXPORTER_OTLP_TRACES_ENDPOINT OTEL_EXPORTER_OTLP_ENDPOINT ANTHROPIC_BASE_URL GOOGLE_GEMINI_BASE_URL
CODE_ASSIST_ENDPOINT CODEX_HOME XDG_CONFIG_HOME OPENCODE_CONFIG'
value_flags=" --home --cwd --attach --model --exec --base-url --endpoint --host --token-file \
--plan --junit --out "
sandbox_code='scripts/reins.sh scripts/sandbox_flags.ts scripts/invocation.ts scripts/permissions.ts
scripts/launcher_cache.ts lib/core/env.ts lib/core/paths.ts lib/core/command_line.ts
lib/core/errors.ts'
allow_env=--allow-env=REINS_HOME,HOME,NO_COLOR,TMPDIR,REINS_CONFIG,REINS_CLAUDE_BIN,\
REINS_CODEX_BIN,REINS_GEMINI_BIN,REINS_OPENCODE_BIN,REINS_SANDBOX,REINS_LAUNCHER_CACHE,\
HARNESS_PLATFORM_URL,HARNESS_PLATFORM_API_KEY,HARNESS_PLATFORM_SECRET_KEY,\
HARNESS_PLATFORM_WORKSPACE_ID,HARNESS_PLATFORM_ALLOW_HTTP,FI_BASE_URL,FI_API_KEY,FI_SECRET_KEY,\
ALK_HARNESS_JOB_ID,REINS_SHARD,JOB_COMPLETION_INDEX,LOG_TOKENS,LOG_STREAM,OPENAI_BASE_URL,\
OPENAI_API_KEY,ANTHROPIC_BASE_URL,CLAUDE_CODE_USE_BEDROCK,CLAUDE_CODE_USE_VERTEX,\
GOOGLE_GEMINI_BASE_URL,CODE_ASSIST_ENDPOINT,GOOGLE_GENAI_USE_VERTEXAI,CODEX_HOME,XDG_CONFIG_HOME,\
OPENCODE_CONFIG,OPENCODE_CONFIG_CONTENT,OTEL_EXPORTER_OTLP_ENDPOINT,OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,\
OTEL_EXPORTER_OTLP_HEADERS,OTEL_EXPORTER_OTLP_TRACES_HEADERS,OTEL_EXPORTER_OTLP_METRICS_HEADERS,\
OTEL_EXPORTER_OTLP_LOGS_HEADERS,OTEL_EXPORTER_OTLP_TIMEOUT,\
OTEL_EXPORTER_OTLP_TRACES_TIMEOUT,OTEL_EXPORTER_OTLP_PROTOCOL,OTEL_EXPORTER_OTLP_TRACES_PROTOCOL,\
OTEL_EXPORTER_OTLP_COMPRESSION,OTEL_EXPORTER_OTLP_TRACES_COMPRESSION,OTEL_SERVICE_NAME,\
OTEL_RESOURCE_ATTRIBUTES,OTEL_SDK_DISABLED,OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT,\
OTEL_SPAN_ATTRIBUTE_VALUE_LENGTH_LIMIT,OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,\
HTTP_PROXY,HTTPS_PROXY,ALL_PROXY,NO_PROXY,http_proxy,https_proxy,all_proxy,no_proxy

# The key: each part with its length, so that no two invocations read as one.
key="reins launcher 1"
for part in "$deno" "$repo" "$start"; do key="$key$nl${#part}:$part"; done
for name in $sandbox_env; do
  eval "value=\${$name-} set=\${$name+=}"
  key="$key$nl$name$set${#value}:$value"
done
# The words of the command line that can name something: every flag, the word after each of
# the flags invocation.ts reads (VALUE_FLAGS), and the command; not a prompt, a run id, a context
# (sandbox_flags.ts sees only these, as --keep says). A suite names its files with bare words: its
# command line is kept whole.
keep=
for arg; do
  [ "$arg" = suite ] && keep=all
done
if [ -n "$keep" ]; then
  for arg; do key="$key$nl${#arg}:$arg"; done
else
  i=0 flag= command=
  for arg; do
    i=$((i + 1))
    if [ -z "$flag" ]; then
      case $arg in
      --) break ;;
      -*) ;;
      *)
        [ -n "$command" ] && continue
        command=$arg
        ;;
      esac
    fi
    case $value_flags in *" $arg "*) flag=1 ;; *) flag= ;; esac
    keep="$keep $i"
    key="$key$nl${#arg}:$arg"
  done
fi
# The config file whose drivers.*.program are granted, found as invocation.ts finds it (the last
# --home, else REINS_HOME, else ~/.reins; REINS_CONFIG before all).
home= home_given= take=
for arg; do
  if [ -n "$take" ]; then
    home=$arg home_given=1 take=
    continue
  fi
  case $arg in
  --) break ;;
  --home) take=1 ;;
  --home=*) home=${arg#--home=} home_given=1 ;;
  esac
done
if [ -n "${REINS_CONFIG-}" ]; then
  config=$REINS_CONFIG
elif [ -n "$home_given" ]; then
  config=$home/config.json
elif [ -n "${REINS_HOME-}" ]; then
  config=$REINS_HOME/config.json
else
  config=${HOME-}/.reins/config.json
fi
case $config in /*) ;; *) config=$start/$config ;; esac

# The cache: private to this user, one entry a key, each naming the code and the config file it
# was computed from by their SHA-256 (one sha256sum for the key and all of them). No cache where
# a path would not survive as one of Deno's comma-separated grants or one line.
cache=
case ${XDG_CACHE_HOME-} in
/*) cache=$XDG_CACHE_HOME/reins/launcher ;;
*) case ${HOME-} in /*) cache=$HOME/.cache/reins/launcher ;; esac ;;
esac
case $cache in *,* | *"$nl"*) cache= ;; esac
hash= sums= sha256sum=
for dir in /usr/bin /bin; do
  [ -x "$dir/sha256sum" ] && sha256sum=$dir/sha256sum && break
done
[ -z "$sha256sum" ] && command -v sha256sum >/dev/null 2>&1 && sha256sum=sha256sum
if [ -n "$cache" ] && [ -n "$sha256sum" ]; then
  # LC_ALL=C: a locale's dozen files are most of what sha256sum would read otherwise.
  sums=$(cd "$repo" && LC_ALL=C exec "$sha256sum" - $sandbox_code "$config" 2>/dev/null <<EOF
$key
EOF
)
  hash=${sums%%" "*}
  case ${#hash}:$hash in 64:*[!0-9a-f]*) hash= ;; 64:*) ;; *) hash= ;; esac
fi
# The first 16 hex digits of each file's SHA-256, as an entry keeps them (a reader of a few bytes
# a time: an entry is short).
deps= rest=${sums#*"$nl"}
while [ -n "$hash" ]; do
  line=${rest%%"$nl"*}
  deps="$deps ${line%"${line#????????????????}"}"
  [ "$line" = "$rest" ] && break
  rest=${rest#*"$nl"}
done
entry=$cache/$hash

# An entry is used only when it is this user's own file (not a link) in this user's own directory,
# was stored for this key, names the code and config file as they are now, and holds only
# permission flags. main.ts then checks that no one else may write it (sandbox.ts).
hit= flags= origin=
if [ -n "$hash" ] && [ -f "$entry" ] && [ ! -L "$entry" ] && [ -O "$entry" ] &&
  [ ! -L "$cache" ] && [ -O "$cache" ]; then
  {
    IFS= read -r line || line=
    if [ "$line" = "reins launcher cache 1 ${hash%"${hash#????????????????}"}" ]; then
      hit=1 got=
      while IFS= read -r line; do
        case $line in
        "deps "*) got=${line#deps} ;;
        "origin {"*) origin=${line#origin } ;;
        env) flags="$flags$nl$allow_env" ;;
        --allow-read=?* | --allow-write=?* | --allow-net=?* | --allow-run=?* | --allow-env=?* | \
          --allow-sys=?* | --no-prompt) flags="$flags$nl$line" ;;
        *)
          hit=
          break
          ;;
        esac
      done
      [ "$got" = "$deps" ] && [ -n "$origin" ] || hit=
    fi
  } <"$entry"
fi
if [ -n "$hit" ]; then
  REINS_SANDBOX=$origin
  REINS_LAUNCHER_CACHE=$entry
  export REINS_SANDBOX REINS_LAUNCHER_CACHE
else
  unset REINS_LAUNCHER_CACHE
  if [ -n "$hash" ]; then
    out=$("$deno" run --quiet --allow-all --no-prompt --config "$repo/deno.json" \
      "$repo/scripts/sandbox_flags.ts" --start "$start" --keep "$keep" \
      --entry "$entry" --config-file "$config" --sums "${sums#*"$nl"}" -- "$@") || exit $?
  else
    out=$("$deno" run --quiet --allow-all --no-prompt --config "$repo/deno.json" \
      "$repo/scripts/sandbox_flags.ts" --start "$start" --keep "$keep" -- "$@") || exit $?
  fi
  REINS_SANDBOX=${out%%"$nl"*}
  flags=${out#*"$nl"}
  export REINS_SANDBOX
fi
# Whether from the cache or not, main.ts may read the entry, to check it (and nothing else of it).
if [ -n "$hash" ]; then
  flags="$flags$nl--allow-read=$entry$nl--allow-env=REINS_LAUNCHER_CACHE"
fi
# One flag a line: split on newlines only, and never glob.
IFS=$nl
set -f
# shellcheck disable=SC2086
exec "$deno" run --quiet --config "$repo/deno.json" $flags "$repo/main.ts" "$@"
