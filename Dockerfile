# reins in a container, for suites on a scheduler (docs/suites.md: a Kubernetes Indexed Job, a CI
# matrix): Deno from npm, this checkout in /opt/reins (the example suite too), and the launcher
# `deno task install` writes, which builds reins's sandbox each time it starts — from REINS_HOME,
# REINS_ALLOW_RUN and the command line — so one image serves every shard's data root.
#   docker build -t reins .
#   docker run --rm -e REINS_ALLOW_RUN=sh,/opt/reins/examples/suite/agents/shop.sh \
#     -w /opt/reins/examples/suite reins suite run suite.yaml --no-report
FROM node:22-bookworm-slim
# kill and ps: reins stops an agent's process group with them (scripts/permissions.ts).
RUN apt-get update \
  && apt-get install -y --no-install-recommends procps \
  && rm -rf /var/lib/apt/lists/*
RUN npm install -g deno@2.9.6
WORKDIR /opt/reins
COPY deno.json deno.lock main.ts ./
COPY lib ./lib
COPY scripts ./scripts
COPY examples ./examples
# The launcher on the PATH; it fetches the locked dependencies, so a shard needs no registry.
RUN deno task install --dir /usr/local/bin
ENV REINS_HOME=/var/lib/reins
ENTRYPOINT ["reins"]
