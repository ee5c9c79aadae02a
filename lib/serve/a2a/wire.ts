// The A2A 1.0 wire types (specification/a2a.proto, as ProtoJSON: camelCase fields, enums by their
// proto names). What reins receives is a zod schema, checked at the edge; what it sends is a plain
// type it builds. Unknown fields are ignored (A2A 1.0 §5.7), enums are taken by name or number and
// an empty string reads as an absent field, as ProtoJSON has it.
import { z } from "zod";

export const TASK_STATES = [
  "TASK_STATE_UNSPECIFIED",
  "TASK_STATE_SUBMITTED",
  "TASK_STATE_WORKING",
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_INPUT_REQUIRED",
  "TASK_STATE_REJECTED",
  "TASK_STATE_AUTH_REQUIRED",
] as const;
export type TaskState = typeof TASK_STATES[number];

export const TERMINAL_STATES: ReadonlySet<TaskState> = new Set([
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED",
]);
/** States a blocking send returns at and a message stream closes at, as well as terminal ones. */
export const INTERRUPTED_STATES: ReadonlySet<TaskState> = new Set([
  "TASK_STATE_INPUT_REQUIRED",
  "TASK_STATE_AUTH_REQUIRED",
]);

export const ROLES = ["ROLE_UNSPECIFIED", "ROLE_USER", "ROLE_AGENT"] as const;
export type RoleName = typeof ROLES[number];

// ---- what is sent ----------------------------------------------------------------------------

export interface Part {
  text?: string;
  raw?: string;
  url?: string;
  data?: unknown;
  metadata?: Record<string, unknown>;
  filename?: string;
  mediaType?: string;
}

export interface Message {
  messageId: string;
  contextId?: string;
  taskId?: string;
  role: "ROLE_USER" | "ROLE_AGENT";
  parts: Part[];
  metadata?: Record<string, unknown>;
  extensions?: string[];
  referenceTaskIds?: string[];
}

export interface TaskStatus {
  state: TaskState;
  message?: Message;
  timestamp?: string;
}

export interface Artifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: Part[];
  metadata?: Record<string, unknown>;
}

export interface Task {
  id: string;
  contextId: string;
  status: TaskStatus;
  artifacts?: Artifact[];
  history?: Message[];
  metadata?: Record<string, unknown>;
}

export interface TaskStatusUpdateEvent {
  taskId: string;
  contextId: string;
  status: TaskStatus;
  metadata?: Record<string, unknown>;
}

export interface TaskArtifactUpdateEvent {
  taskId: string;
  contextId: string;
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
  metadata?: Record<string, unknown>;
}

/** One item of a stream (StreamResponse): exactly one member set. */
export type StreamResponse =
  | { task: Task }
  | { message: Message }
  | { statusUpdate: TaskStatusUpdateEvent }
  | { artifactUpdate: TaskArtifactUpdateEvent };

export interface ListTasksResponse {
  tasks: Task[];
  nextPageToken: string;
  pageSize: number;
  totalSize: number;
}

// ---- what is received ------------------------------------------------------------------------

/** A string where "" means absent (a proto3 default). */
const Id = z.string().max(1024).transform((value) => value === "" ? undefined : value).optional();

/** An int32 as ProtoJSON allows it: a number, or a decimal string. */
const Int32 = z.union([
  z.number().int(),
  z.string().regex(/^-?\d{1,10}$/).transform(Number),
]).pipe(z.number().int().min(-2147483648).max(2147483647));

function protoEnum<const T extends readonly string[]>(names: T) {
  return z.union([
    z.enum(names),
    z.number().int().min(0).max(names.length - 1).transform((n) => names[n] as T[number]),
  ]);
}

const Struct = z.record(z.string(), z.unknown());

export const PartIn = z.looseObject({
  text: z.string().optional(),
  raw: z.string().optional(),
  url: z.string().optional(),
  data: z.unknown().optional(),
  metadata: Struct.optional(),
  filename: z.string().optional(),
  mediaType: z.string().optional(),
});
export type PartIn = z.infer<typeof PartIn>;

export const MessageIn = z.looseObject({
  messageId: z.string().min(1, "is required").max(1024),
  contextId: Id,
  taskId: Id,
  role: protoEnum(ROLES),
  parts: z.array(PartIn).min(1, "at least one part is required"),
  metadata: Struct.optional(),
  extensions: z.array(z.string()).optional(),
  referenceTaskIds: z.array(z.string()).optional(),
});
export type MessageIn = z.infer<typeof MessageIn>;

export const SendMessageRequest = z.looseObject({
  tenant: Id,
  message: MessageIn,
  configuration: z.looseObject({
    acceptedOutputModes: z.array(z.string()).optional(),
    taskPushNotificationConfig: z.unknown().optional(),
    historyLength: Int32.optional(),
    returnImmediately: z.boolean().optional(),
  }).optional(),
  metadata: Struct.optional(),
});
export type SendMessageRequest = z.infer<typeof SendMessageRequest>;

export const GetTaskRequest = z.looseObject({
  tenant: Id,
  id: z.string().min(1, "is required").max(1024),
  historyLength: Int32.optional(),
});
export type GetTaskRequest = z.infer<typeof GetTaskRequest>;

export const ListTasksRequest = z.looseObject({
  tenant: Id,
  contextId: Id,
  status: protoEnum(TASK_STATES).optional(),
  pageSize: Int32.optional(),
  pageToken: z.string().max(1024).optional(),
  historyLength: Int32.optional(),
  statusTimestampAfter: z.iso.datetime({ offset: true }).optional(),
  includeArtifacts: z.boolean().optional(),
});
export type ListTasksRequest = z.infer<typeof ListTasksRequest>;

export const CancelTaskRequest = z.looseObject({
  tenant: Id,
  id: z.string().min(1, "is required").max(1024),
  metadata: Struct.optional(),
});
export type CancelTaskRequest = z.infer<typeof CancelTaskRequest>;

export const SubscribeToTaskRequest = z.looseObject({
  tenant: Id,
  id: z.string().min(1, "is required").max(1024),
});
export type SubscribeToTaskRequest = z.infer<typeof SubscribeToTaskRequest>;

/** The params of reins's ForgetContext extension method. */
export const ForgetContextRequest = z.looseObject({
  contextId: z.string().min(1, "is required").max(1024),
});
export type ForgetContextRequest = z.infer<typeof ForgetContextRequest>;
