#!/usr/bin/env bash
# A loop-level adapter double for harness/tests/loop_protocol.rs. It declares
# both levels. For a loop `run` it POSTs one chat-completions body to the
# request's `provider_url` (bash's /dev/tcp), reads the answer to the end, and
# replies with a run whose log holds one user message with an id and a time of
# its own (as a real-time implementation would mint them) and whose
# `requests` holds junk: the harness must replace it with what its provider
# received.
while IFS= read -r line; do
  seq=$(printf '%s' "$line" | sed -n 's/.*"seq":\([0-9]*\).*/\1/p')
  case "$line" in
    *'"cmd":"start"'*)
      printf '{"seq":%s,"started":{"version":1,"implementation":{"name":"double-loop","version":"0","language":"bash"},"capabilities":{"levels":["assembly","loop"]}}}\n' "$seq"
      ;;
    *'"cmd":"stop"'*)
      printf '{"seq":%s,"stopped":{}}\n' "$seq"
      exit 0
      ;;
    *'"provider_url":"http://'*)
      address=$(printf '%s' "$line" | sed -n 's/.*"provider_url":"http:\/\/\([^"]*\)".*/\1/p')
      body='{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}'
      exec 3<>"/dev/tcp/${address%:*}/${address##*:}"
      printf 'POST /chat/completions HTTP/1.1\r\nhost: %s\r\ncontent-type: application/json\r\ncontent-length: %s\r\nconnection: close\r\n\r\n%s' \
        "$address" "${#body}" "$body" >&3
      cat <&3 >/dev/null
      exec 3<&-
      printf '{"seq":%s,"result":{"observations":[],"run":{"log":[{"type":"user/message","seq":0,"time":%s,"data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},"role":"user","id":"7d0c9f8e-0000-4000-8000-000000000001"},"surfaceOp":"append"}],"requests":[{"body":{"junk":true}}],"status":"idle","pending":[0,0],"live_events":[]}}}\n' \
        "$seq" "$(date +%s)000"
      ;;
    *)
      printf '{"seq":%s,"errored":{"context":"the double only runs loop cases with a provider_url"}}\n' "$seq"
      ;;
  esac
done
