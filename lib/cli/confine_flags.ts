// --confine and --allow-host, for every command that runs agents (run, suite run, serve). Named
// apart from reins's own "sandbox" (what reins itself may touch): these confine the agents.
export const CONFINE_FLAGS = {
  confine: {
    type: "boolean",
    description:
      "confine each agent under bubblewrap: it sees its working directory and its model, not the " +
      "data root or your secrets (docs/confinement.md; not reins's own sandbox)",
  },
  "allow-host": {
    type: "string",
    multiple: true,
    value: "HOST[:PORT]",
    description: "with --confine: let agents reach HOST (any port, or PORT) through reins's proxy",
  },
} as const;

/**
 * The settings with the flags applied (for commands whose turns are made below the CLI: suite
 * run, serve): --confine turns confine.enabled on, --allow-host adds to confine.allowHosts.
 */
export function settingsWithConfine<
  S extends { confine: { enabled: boolean; allowHosts: string[] } },
>(
  settings: S,
  flags: { confine?: boolean; "allow-host"?: string[] },
): S {
  if (!flags.confine && !flags["allow-host"]?.length) return settings;
  return {
    ...settings,
    confine: {
      ...settings.confine,
      enabled: settings.confine.enabled || flags.confine === true,
      allowHosts: [...settings.confine.allowHosts, ...flags["allow-host"] ?? []],
    },
  };
}

/** The turn request's fields for the flags given (none when neither was). */
export function confineOfFlags(
  flags: { confine?: boolean; "allow-host"?: string[] },
): { confine?: boolean; allowHosts?: string[] } {
  return {
    ...(flags.confine ? { confine: true } : {}),
    ...(flags["allow-host"]?.length ? { allowHosts: flags["allow-host"] } : {}),
  };
}
