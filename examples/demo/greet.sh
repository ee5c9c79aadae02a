#!/bin/sh
# Greets the name given, or the world.
echo "Hello, ${1:-world}!"
