// The live report of a suite run (SuiteReporter), in process, against the strict fake platform.
import assert from "node:assert/strict";
import { loadSettings } from "../../lib/core/config.ts";
import { platformTarget } from "../../lib/platform/client.ts";
import { parseSuite } from "../../lib/suite/load.ts";
import { SuiteReporter } from "../../lib/suite/report.ts";
import { startSuiteRun } from "../../lib/suite/start.ts";
import { openStore } from "../../lib/store/store.ts";
import { startFakePlatform } from "../fixtures/fake_platform.ts";
import { tempDir } from "../support/reins.ts";

// regression: two scenarios ending together had their changes both written before the delivery
// the first one scheduled read the report; that delivery sent them both and removed the report,
// and the second one's delivery then found nothing and replaced the outcome with a blank
// "reported" whose url was null (`reins suite run --json` printed `"url": null`; seen in CI under
// load as a failure of tests/e2e/suite_report_test.ts).
Deno.test("SuiteReporter keeps where the report went when scenarios end at the same time", async () => {
  await using dir = await tempDir();
  const platform = startFakePlatform();
  try {
    using store = openStore(`${dir.path}/home`);
    const settings = loadSettings({
      REINS_HOME: store.home,
      HARNESS_PLATFORM_URL: platform.url,
      HARNESS_PLATFORM_API_KEY: platform.apiKey,
      HARNESS_PLATFORM_SECRET_KEY: platform.secretKey,
    });
    const yaml = [
      "suite: together",
      "driver: command",
      "exec: ./agent.sh",
      "scenarios:",
      "  - { key: one, turns: [hello] }",
      "  - { key: two, turns: [hello] }",
      "  - { key: three, turns: [hello] }",
      "",
    ].join("\n");
    await Deno.writeTextFile(`${dir.path}/suite.yaml`, yaml);
    const suite = parseSuite(`${dir.path}/suite.yaml`, new TextEncoder().encode(yaml));
    const started = startSuiteRun(store, suite, { kind: "fresh", filter: null, repeat: 1 }, {
      jobs: 3,
      report: true,
    });
    using handle = started.handle;
    const reporter = SuiteReporter.begin({
      root: store,
      settings,
      target: platformTarget(settings.platform),
      suite,
      handle,
      instances: handle.header.instances,
      note: () => {},
    });
    assert.ok(reporter !== null);
    // Every scenario ends at once, none waiting for the others' deliveries.
    await Promise.all(handle.header.instances.map((instance) => {
      const state = { ...handle.readScenario(instance), status: "error" as const };
      const spec = suite.scenarios.find((scenario) => scenario.index === instance.index)!;
      return reporter.finished({ state, spec, evidence: null }, []);
    }));
    const { outcome } = await reporter.close();
    assert.equal(outcome?.state, "reported", JSON.stringify(outcome));
    assert.match(outcome!.url ?? "", /^\/dashboard\/simulate\/test\/[^/]+\/[^/]+$/);
    assert.equal(outcome!.runTestId, [...platform.tests.keys()][0]);
    assert.equal(platform.requests.filter((r) => r.route === "result").length, 3);
  } finally {
    await platform.close();
  }
});
