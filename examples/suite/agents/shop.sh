#!/bin/sh
# A small customer-support agent for the example suite, driven by `reins suite` through the
# command driver. It reads the customer's message on stdin, looks orders up in orders.csv and
# refunds one with its issue_refund "tool" (it writes refunds.csv). It speaks reins's event
# protocol (docs/event-protocol.md) for the tool call and for what the turn cost; every other
# line it prints is its answer. It remembers the order being talked about in .last-order, so a
# later turn of the same scenario ("I want a refund") knows which one.
prompt=$(cat)
order=$(printf '%s\n' "$prompt" | grep -o '[0-9][0-9][0-9][0-9]' | head -n 1)
if [ -z "$order" ] && [ -f .last-order ]; then order=$(cat .last-order); fi
[ -n "$order" ] && printf '%s\n' "$order" > .last-order

cost() {
  printf '{"type":"usage.updated","payload":{"inputTokens":%s,"outputTokens":%s,"cacheReadTokens":null,"cacheWriteTokens":null,"reasoningTokens":null,"costUsd":%s,"requests":1}}\n' "$1" "$2" "$3"
}

line=$(grep "^$order," orders.csv 2>/dev/null)
case "$prompt" in
  *[Rr]efund*)
    if [ -z "$line" ]; then
      cost 120 30 0.0021
      echo "I could not find that order. Which order number is it?"
      exit 0
    fi
    amount=$(printf '%s' "$line" | cut -d, -f3)
    printf '{"type":"tool.started","payload":{"callId":"refund-%s","tool":"issue_refund","args":{"order":"%s","amount":"%s"}}}\n' "$order" "$order" "$amount"
    printf '%s,%s\n' "$order" "$amount" >> refunds.csv
    printf '{"type":"tool.completed","payload":{"callId":"refund-%s","ok":true,"result":"refund %s issued","startedAt":null,"finishedAt":null}}\n' "$order" "$order"
    cost 240 60 0.0042
    echo "I am sorry for the delay. I have refunded order $order (\$$amount); the money arrives within 5 business days."
    ;;
  *)
    cost 100 25 0.0018
    if [ -z "$line" ]; then
      echo "Hello! How can I help you today?"
    else
      state=$(printf '%s' "$line" | cut -d, -f2)
      echo "Order $order is $state: it left our warehouse ten days ago. I apologise for the wait."
    fi
    ;;
esac
