// regression: docs/suites.md's Kubernetes Job and GitHub Actions matrix could not run as printed
// (no step installed reins, no REINS_ALLOW_RUN for the agent and sh, the agent's and workdir's
// files not in the pod's mount). Here both run as printed, with what this machine has: the
// repo's Dockerfile is played into a directory that stands for the image (its COPY lines copy
// the repo's files, which must exist; its Deno from npm is the Deno running this test), the Job's
// pods run one after another with the image's paths under that directory, and the workflow's
// jobs run in order with their `uses:` steps done by hand (checkout, artifacts). Docker, kubectl
// and a runner are not needed; what each step runs is the printed text.
import assert from "node:assert/strict";
import { basename, join } from "node:path";
import { parse } from "yaml";
import { tempDir } from "../support/reins.ts";
import { startFakePlatform } from "../fixtures/fake_platform.ts";
import { PROCESS_TOOLS } from "../../scripts/permissions.ts";

const REPO = new URL("../../", import.meta.url).pathname.replace(/\/$/, "");
const DOCS = Deno.readTextFileSync(`${REPO}/docs/suites.md`);
// The Deno version the README installs from npm: the recipes must install the same.
const DENO_FROM_NPM = /npx --yes deno@(\d+\.\d+\.\d+)/.exec(
  Deno.readTextFileSync(`${REPO}/README.md`),
)![1];
const DENO_DIR = Deno.env.get("DENO_DIR") ||
  `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`;
const SCENARIOS = 4;

/** The fenced blocks of a section of docs/suites.md, in order, with their language. */
function blocksOf(heading: string): { lang: string; text: string }[] {
  const start = DOCS.indexOf(`\n${heading}\n`);
  assert.ok(start >= 0, `no section ${heading}`);
  const rest = DOCS.slice(start + heading.length + 2);
  const end = rest.search(/\n#{2,3} /);
  const section = end < 0 ? rest : rest.slice(0, end);
  return [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], text: m[2] }));
}

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

async function sh(
  script: string,
  options: { cwd: string; env: Record<string, string>; shell?: string[] },
): Promise<Ran> {
  const [program, ...flags] = options.shell ?? ["sh", "-c"];
  const output = await new Deno.Command(program, {
    args: [...flags, script],
    cwd: options.cwd,
    clearEnv: true,
    env: { DENO_DIR, DENO_NO_UPDATE_CHECK: "1", NO_COLOR: "1", ...options.env },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const decoder = new TextDecoder();
  return {
    code: output.code,
    stdout: decoder.decode(output.stdout),
    stderr: decoder.decode(output.stderr),
  };
}

function assertRan(ran: Ran, what: string): void {
  assert.equal(ran.code, 0, `${what}:\n${ran.stderr}${ran.stdout}`);
}

/** `cp -R`, made plain: the repo's files, which a recipe must name only as they exist. */
async function copy(from: string, to: string): Promise<void> {
  const info = await Deno.lstat(from);
  if (info.isDirectory) {
    await Deno.mkdir(to, { recursive: true });
    for await (const entry of Deno.readDir(from)) {
      await copy(`${from}/${entry.name}`, `${to}/${entry.name}`);
    }
  } else if (info.isSymlink) {
    await Deno.symlink(await Deno.readLink(from), to);
  } else {
    await Deno.mkdir(to.slice(0, to.lastIndexOf("/")), { recursive: true });
    await Deno.copyFile(from, to);
    if (info.mode !== null) await Deno.chmod(to, info.mode & 0o777);
  }
}

/** What a checkout has that reins needs (docs and tests aside). */
async function checkout(into: string): Promise<void> {
  for (const name of ["deno.json", "deno.lock", "main.ts", "lib", "scripts", "examples"]) {
    await copy(`${REPO}/${name}`, `${into}/${name}`);
  }
}

/**
 * The repo's Dockerfile played into `root`, the image's `/`: its COPY sources must be the
 * repo's files, its Deno from npm the README's version, and kill and ps installed.
 */
async function buildImage(root: string): Promise<{ env: Record<string, string>; bin: string }> {
  const text = Deno.readTextFileSync(`${REPO}/Dockerfile`).replace(/\\\n/g, " ");
  let workdir = "/";
  const env: Record<string, string> = {};
  let installed = false;
  for (const line of text.split("\n").map((l) => l.trim())) {
    if (line === "" || line.startsWith("#")) continue;
    const [instruction, ...rest] = line.split(/\s+/);
    const args = rest.join(" ");
    switch (instruction) {
      case "FROM":
        assert.match(args, /bookworm|bullseye|debian/, "a Debian image, for npm's glibc Deno");
        break;
      case "WORKDIR":
        workdir = args;
        break;
      case "ENV": {
        const [name, value] = args.split("=");
        env[name] = value;
        break;
      }
      case "COPY": {
        // Docker's rules: a directory's contents go into the destination; files go into it
        // when it ends with '/' (or several are given), else become it.
        const sources = rest.slice(0, -1);
        const dest = rest[rest.length - 1];
        const target = join(root, dest.startsWith("/") ? dest : join(workdir, dest));
        const intoDir = dest.endsWith("/") || sources.length > 1;
        for (const source of sources) {
          const from = join(REPO, source);
          const info = await Deno.stat(from).catch(() => null);
          assert.ok(info, `COPY ${source}: not in the repo`);
          const to = info.isDirectory || !intoDir ? target : join(target, basename(source));
          await copy(from, to);
        }
        break;
      }
      case "RUN": {
        if (args.includes("apt-get install")) {
          // Debian's procps has both (reins stops agents' groups with them).
          assert.deepEqual(PROCESS_TOOLS, ["kill", "ps"]);
          assert.match(args, /\bprocps\b/);
        } else if (/npm install -g deno@/.test(args)) {
          assert.equal(/deno@(\S+)/.exec(args)![1], DENO_FROM_NPM);
        } else if (/^deno task install --dir \S+$/.test(args)) {
          const dir = args.split(" ").pop()!;
          const ran = await sh(`"$DENO" task install --dir "${root}${dir}"`, {
            cwd: `${root}${workdir}`,
            env: { DENO: Deno.execPath(), HOME: `${root}/root`, PATH: Deno.env.get("PATH")! },
          });
          assertRan(ran, "RUN deno task install");
          env.PATH = `${root}${dir}`;
          installed = true;
        } else {
          assert.fail(`the test does not know how to play RUN ${args}`);
        }
        break;
      }
      case "ENTRYPOINT":
        assert.deepEqual(JSON.parse(args), ["reins"]);
        break;
      default:
        assert.fail(`the test does not know how to play ${instruction}`);
    }
  }
  assert.ok(installed, "the Dockerfile installs the launcher");
  return { env, bin: env.PATH };
}

function platformEnv(platform: { url: string; apiKey: string; secretKey: string }) {
  return {
    HARNESS_PLATFORM_URL: platform.url,
    HARNESS_PLATFORM_API_KEY: platform.apiKey,
    HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
  };
}

Deno.test("regression: the Kubernetes Indexed Job of docs/suites.md runs as printed from the repo's Dockerfile", async () => {
  await using dir = await tempDir();
  const root = `${dir.path}/image`;
  const image = await buildImage(root);
  const [commands, job] = blocksOf("### A Kubernetes Indexed Job");
  assert.equal(commands.lang, "sh");
  assert.equal(job.lang, "yaml");
  const spec = parse(job.text) as {
    kind: string;
    spec: {
      completionMode: string;
      completions: number;
      parallelism: number;
      template: {
        spec: {
          containers: {
            workingDir: string;
            command: string[];
            args: string[];
            env: { name: string; value?: string; valueFrom?: unknown }[];
            volumeMounts: { name: string; mountPath: string }[];
          }[];
          volumes: {
            name: string;
            configMap?: { name: string };
            persistentVolumeClaim?: { claimName: string };
          }[];
        };
      };
    };
  };
  assert.equal(spec.kind, "Job");
  assert.equal(spec.spec.completionMode, "Indexed");
  const [container] = spec.spec.template.spec.containers;
  const platform = startFakePlatform();
  try {
    const secrets: Record<string, string> = {
      "platform/api-key": platform.apiKey,
      "platform/secret-key": platform.secretKey,
    };
    const configMaps = new Map<string, string>();
    const work = `${dir.path}/work`;
    const checkoutDir = `${work}/checkout`;
    await checkout(checkoutDir);
    const base = { HOME: `${dir.path}/home`, PATH: `${image.bin}:${Deno.env.get("PATH")}` };
    let pods = 0;
    for (const line of commands.text.split("\n").map((l) => l.trim())) {
      if (line === "" || line.startsWith("#")) continue;
      if (line.startsWith("reins suite plan ")) {
        assertRan(
          await sh(line, { cwd: checkoutDir, env: { ...base, ...platformEnv(platform) } }),
          line,
        );
        const shards = Number(/--shards (\d+)/.exec(line)![1]);
        assert.equal(spec.spec.completions, shards, "completions = --shards of the plan");
      } else if (line.startsWith("kubectl create configmap ")) {
        const [, name, file] = /configmap (\S+) --from-file=(\S+)$/.exec(line)!;
        const into = `${dir.path}/configmaps/${name}`;
        await Deno.mkdir(into, { recursive: true });
        await Deno.copyFile(`${checkoutDir}/${file}`, `${into}/${file}`);
        configMaps.set(name, into);
      } else if (line.startsWith("kubectl apply ")) {
        // The pods, one after another, each with the image's paths under `root`.
        for (const volume of spec.spec.template.spec.volumes) {
          const mount = container.volumeMounts.find((m) => m.name === volume.name)!;
          if (volume.configMap) {
            const from = configMaps.get(volume.configMap.name);
            assert.ok(from, `the ConfigMap ${volume.configMap.name} was made first`);
            await copy(from, `${root}${mount.mountPath}`);
          } else {
            await Deno.mkdir(`${root}${mount.mountPath}`, { recursive: true });
          }
        }
        const inImage = (text: string) =>
          text.replace(/(^|[\s=,])\/(?=opt\/|plan\/|results\/|var\/)/g, `$1${root}/`);
        for (let index = 0; index < spec.spec.completions; index++) {
          const env: Record<string, string> = {
            ...image.env,
            PATH: base.PATH,
            HOME: `${root}/root`,
            JOB_COMPLETION_INDEX: String(index),
          };
          env.REINS_HOME = inImage(env.REINS_HOME);
          for (const variable of container.env) {
            const ref = (variable.valueFrom as { secretKeyRef?: { name: string; key: string } })
              ?.secretKeyRef;
            env[variable.name] = ref ? secrets[`${ref.name}/${ref.key}`] : inImage(variable.value!);
          }
          // The printed platform is an example's: this one stands for it.
          env.HARNESS_PLATFORM_URL = platform.url;
          assert.deepEqual(container.command, ["sh", "-c"]);
          const ran = await sh(inImage(container.args.join(" ")), {
            cwd: `${root}${container.workingDir}`,
            env,
          });
          assertRan(ran, `pod ${index}`);
          pods++;
        }
      } else if (line.startsWith("kubectl wait ")) {
        assert.equal(pods, spec.spec.completions, "every pod ran");
      } else if (line.startsWith("reins suite merge ")) {
        await copy(`${root}/results`, `${work}/results`);
        const merged = await sh(line, { cwd: work, env: base });
        assertRan(merged, line);
        assert.match(merged.stdout, new RegExp(`${SCENARIOS} scenarios: ${SCENARIOS} passed`));
        assert.match(await Deno.readTextFile(`${work}/junit.xml`), /<testsuite /);
      } else {
        assert.fail(`the test does not know how to play: ${line}`);
      }
    }
    // One execution, planned once, and every scenario's result in it.
    const routes = platform.requests.map((r) => r.route);
    assert.deepEqual(routes.filter((r) => r !== "status" && r !== "result"), [
      "provision",
      "start",
      "batch",
    ]);
    assert.equal(
      [...platform.calls.values()].filter((call) => call.results.length === 1).length,
      SCENARIOS,
    );
  } finally {
    await platform.close();
  }
});

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, string>;
  env?: Record<string, string>;
}

interface Job {
  needs?: string;
  strategy?: { matrix: Record<string, (string | number)[]> };
  steps: Step[];
}

Deno.test("regression: the GitHub Actions matrix of docs/suites.md runs as printed, job by job", async () => {
  await using dir = await tempDir();
  const [workflow] = blocksOf("### A CI matrix (GitHub Actions)");
  assert.equal(workflow.lang, "yaml");
  const { jobs } = parse(workflow.text) as { jobs: Record<string, Job> };
  const platform = startFakePlatform();
  const artifacts = `${dir.path}/artifacts`;
  const bash = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c"];
  try {
    const done = new Set<string>();
    const outputs: Record<string, string> = {};
    const order = Object.keys(jobs);
    for (const name of order) {
      const job = jobs[name];
      if (job.needs) assert.ok(done.has(job.needs), `${name} runs after ${job.needs}`);
      const matrix = job.strategy?.matrix ?? {};
      const [axis] = Object.keys(matrix);
      const cells = axis ? matrix[axis].map((value) => ({ [axis]: String(value) })) : [{}];
      for (const cell of cells) {
        const label = `${name}${axis ? ` ${axis}=${cell[axis]}` : ""}`;
        const workspace = `${dir.path}/${name}-${cell[axis] ?? 0}/work`;
        const temp = `${dir.path}/${name}-${cell[axis] ?? 0}/temp`;
        await Deno.mkdir(workspace, { recursive: true });
        await Deno.mkdir(temp, { recursive: true });
        const githubPath = `${temp}/github_path`;
        await Deno.writeTextFile(githubPath, "");
        const expand = (text: string) =>
          text.replace(/\$\{\{\s*([\w.-]+)\s*\}\}/g, (_, expression: string) => {
            const [scope, key] = expression.split(".");
            switch (scope) {
              case "matrix":
                return cell[key];
              case "runner":
                assert.equal(key, "temp");
                return temp;
              case "github":
                assert.equal(key, "workspace");
                return workspace;
              case "vars":
              case "secrets": {
                const value = (platformEnv(platform) as Record<string, string>)[key];
                assert.ok(value !== undefined, `no ${expression} in this test`);
                return value;
              }
              default:
                return assert.fail(`the test does not know ${expression}`);
            }
          });
        for (const step of job.steps) {
          const given = Object.fromEntries(
            Object.entries(step.with ?? {}).map(([k, v]) => [k, expand(String(v))]),
          );
          if (step.uses === "actions/checkout@v4") {
            await checkout(workspace);
          } else if (step.uses === "actions/upload-artifact@v4") {
            const from = given.path.startsWith("/") ? given.path : `${workspace}/${given.path}`;
            const to = `${artifacts}/${given.name}`;
            const isDir = (await Deno.stat(from)).isDirectory;
            await copy(from, isDir ? to : `${to}/${from.split("/").pop()}`);
          } else if (step.uses === "actions/download-artifact@v4") {
            if (given.name) {
              await copy(`${artifacts}/${given.name}`, workspace);
            } else {
              const pattern = new RegExp(`^${given.pattern.replace(/\*/g, ".*")}$`);
              for await (const entry of Deno.readDir(artifacts)) {
                if (pattern.test(entry.name)) {
                  await copy(`${artifacts}/${entry.name}`, `${workspace}/${entry.name}`);
                }
              }
            }
          } else if (step.run !== undefined) {
            const script = expand(step.run);
            // npx's Deno from npm is the Deno running this test (the same version, the README's).
            const versions = [...script.matchAll(/npx --yes deno@(\S+)/g)].map((m) => m[1]);
            for (const version of versions) assert.equal(version, DENO_FROM_NPM);
            const extra = (await Deno.readTextFile(githubPath)).split("\n").filter(Boolean);
            const ran = await sh(
              script.replaceAll(`npx --yes deno@${DENO_FROM_NPM}`, JSON.stringify(Deno.execPath())),
              {
                cwd: workspace,
                env: {
                  PATH: [...extra.reverse(), Deno.env.get("PATH")!].join(":"),
                  HOME: `${temp}/home`,
                  RUNNER_TEMP: temp,
                  GITHUB_PATH: githubPath,
                  GITHUB_WORKSPACE: workspace,
                  ...Object.fromEntries(
                    Object.entries(step.env ?? {}).map(([k, v]) => [k, expand(String(v))]),
                  ),
                },
                shell: bash,
              },
            );
            assertRan(ran, `${label}: ${step.run.trim()}`);
            outputs[label] = ran.stdout;
          } else {
            assert.fail(`the test does not know how to play ${step.uses}`);
          }
        }
      }
      done.add(name);
    }
    assert.deepEqual(order, ["plan", "shard", "merge"]);
    assert.match(outputs.merge, new RegExp(`${SCENARIOS} scenarios: ${SCENARIOS} passed`));
    assert.ok(Deno.statSync(`${artifacts}/junit/junit.xml`).isFile);
    assert.equal(
      [...platform.calls.values()].filter((call) => call.results.length === 1).length,
      SCENARIOS,
    );
  } finally {
    await platform.close();
  }
});
