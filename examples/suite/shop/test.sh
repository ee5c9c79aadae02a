#!/bin/sh
# The shop's own test: every refund line is "order,amount" for an order that exists.
[ -f refunds.csv ] || { echo "no refunds.csv"; exit 1; }
while IFS=, read -r order amount; do
  grep -q "^$order," orders.csv || { echo "refund of an unknown order: $order"; exit 1; }
  case "$amount" in *[0-9].[0-9][0-9]) ;; *) echo "bad amount for $order: $amount"; exit 1 ;; esac
done < refunds.csv
echo "refunds ok"
