#!/usr/bin/env bash
# A misbehaving adapter for harness/tests/adapter_doubles.rs.
# Usage: adapter.sh MODE. It answers the handshake and every case correctly
# (a case with no commands has no observations), except cases whose id
# contains "boom", where it misbehaves according to MODE:
#   crash     exit 3 after writing to stderr
#   hang      never answer
#   garbage   answer with a line that is not JSON
#   flood     write an endless line without a newline
#   wrong_seq answer with the wrong seq
#   schema    answer with valid JSON that breaks the schema
#   close_stdout  close stdout and keep running
#   twice     answer twice (the second answer is stale by the next case)
#   provider  send a provider request, as if the case ran on virtual time
#   stray     answer, then write a line with a seq never sent (between cases)
# and these, which misbehave outside "boom" cases:
#   stop_reading  after the first case, never read stdin again
#   no_start  never answer the handshake
#   slow_start  write to stderr for 3 s (an install), then answer the handshake
mode="$1"
cases=0
while IFS= read -r line; do
  seq=$(printf '%s' "$line" | sed -n 's/.*"seq":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"cmd":"start"'*)
      if [ "$mode" = no_start ]; then sleep 600; fi
      if [ "$mode" = slow_start ]; then
        for step in 1 2 3 4 5 6; do echo "installing, step $step" >&2; sleep 0.5; done
      fi
      printf '{"seq":%s,"started":{"version":1,"implementation":{"name":"double-%s","version":"0","language":"bash"},"capabilities":{"levels":["assembly"]}}}\n' "$seq" "$mode"
      ;;
    *'"cmd":"stop"'*)
      printf '{"seq":%s,"stopped":{}}\n' "$seq"
      exit 0
      ;;
    *'"id":"boom'*)
      case "$mode" in
        crash) echo "double: crashing on purpose" >&2; exit 3 ;;
        hang) sleep 600 ;;
        garbage) echo "this is not json" ;;
        flood) yes x | tr -d '\n' ;;
        wrong_seq) printf '{"seq":%s,"result":{"observations":[]}}\n' "$((seq + 7))" ;;
        schema) printf '{"seq":%s,"result":{"observations":"none"}}\n' "$seq" ;;
        close_stdout) exec 1>&-; sleep 15 ;;
        twice) printf '{"seq":%s,"result":{"observations":[]}}\n{"seq":%s,"result":{"observations":[]}}\n' "$seq" "$seq" ;;
        provider) printf '{"seq":%s,"provider_request":{"method":"POST","path":"/chat/completions"}}\n' "$seq" ;;
        stray) printf '{"seq":%s,"result":{"observations":[]}}\n{"seq":%s,"result":{"observations":[]}}\n' "$seq" "$((seq + 50))" ;;
        *) printf '{"seq":%s,"result":{"observations":[]}}\n' "$seq" ;;
      esac
      ;;
    *)
      printf '{"seq":%s,"result":{"observations":[]}}\n' "$seq"
      cases=$((cases + 1))
      if [ "$mode" = stop_reading ]; then sleep 600; fi
      ;;
  esac
done
