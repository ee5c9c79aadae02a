// The door of lib/otel/: OpenTelemetry export of settled runs (docs/otel.md). What is here is light
// (is an endpoint configured? — asked by every run); the export itself (export.ts, deliver.ts,
// outbox.ts, ids.ts: zod and node:crypto) is loaded only through importLazily, whose names may
// point behind a door (docs/architecture.md, "Doors").
export type { ExportOutcome } from "./deliver.ts";
export { endpointConfigured } from "./target.ts";
