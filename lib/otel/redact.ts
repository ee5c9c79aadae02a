// The redactor a trace export applies to every string it sends (request.ts calls it on the
// finished payload): the process's one choke point (lib/core/redact.ts), which knows every secret
// the settings hold (the collector's headers included), taught the headers of this export too.
import { headerSecrets } from "../core/header_secrets.ts";
import { redact, rememberSecrets } from "../core/redact.ts";

export { headerSecrets };

/** The redactor for an export whose requests carry `headers`. */
export function exportRedactor(
  headers: Readonly<Record<string, string>>,
): (text: string) => string {
  rememberSecrets(...headerSecrets(headers));
  return redact;
}
