// The recording body, read back by two real parsers: busboy (RFC 7578 with RFC 7230 quoted
// strings, as the platform's Django reads it) and Deno's Request.formData() (the WHATWG parser).
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fc from "fast-check";
import {
  escapeFilename,
  multipartBody,
  multipartLayout,
  RecordingChangedError,
  type RecordingFile,
  sha256File,
} from "../../lib/platform/multipart.ts";
import { readMultipart } from "../fixtures/fake_platform.ts";
import { tempDir } from "../support/reins.ts";

async function collect(chunks: AsyncIterable<Uint8Array>): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = [];
  for await (const chunk of chunks) parts.push(chunk.slice());
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

async function recordingOf(path: string, bytes: Uint8Array, name: string): Promise<RecordingFile> {
  await Deno.writeFile(path, bytes);
  return {
    path,
    name,
    bytes: bytes.length,
    sha256: createHash("sha256").update(bytes).digest("hex"),
  };
}

Deno.test("escapeFilename() percent-encodes quotes and line breaks and doubles backslashes", () => {
  assert.deepEqual(escapeFilename('a"b\r\nc.wav'), "a%22b%0D%0Ac.wav");
  assert.deepEqual(escapeFilename("C:\\dir\\x\\"), "C:\\\\dir\\\\x\\\\");
  assert.deepEqual(escapeFilename("nul\0tab\tdel\x7f"), "nul%00tab%09del%7F");
  assert.deepEqual(escapeFilename("café 日本 😀.wav"), "café 日本 😀.wav");
});

Deno.test("multipartLayout() gives the exact length of the body multipartBody() yields", async () => {
  await using dir = await tempDir();
  const file = await recordingOf(`${dir.path}/a.wav`, new Uint8Array(12345).fill(3), 'x"y.wav');
  const layout = multipartLayout(file);
  const body = await collect(multipartBody(file, layout, { chunkBytes: 1000 }));
  assert.deepEqual(body.length, layout.length);
  const text = new TextDecoder().decode(body);
  assert.ok(
    text.startsWith(
      `--${layout.boundary}\r\nContent-Disposition: form-data; name="file"; filename="x%22y.wav"\r\nContent-Type: audio/wav\r\n\r\n`,
    ),
  );
  assert.ok(
    text.endsWith(
      `\r\n--${layout.boundary}\r\nContent-Disposition: form-data; name="sha256"\r\n\r\n${file.sha256}\r\n--${layout.boundary}--\r\n`,
    ),
  );
  assert.match(layout.contentType, /^multipart\/form-data; boundary=----reins[0-9a-f]{32}$/);
});

Deno.test("multipartBody() survives busboy and formData() for any filename, with no injected part", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/recording.bin`;
  const alphabet = fc.oneof(
    fc.constantFrom('"', "\r", "\n", "\\", ";", "=", " ", "%", "'", "/", "\t", "\0"),
    fc.constantFrom("é", "日", "😀", "\u2028", "ß"),
    fc.string({ unit: "grapheme-ascii", minLength: 1, maxLength: 3 }),
  );
  await fc.assert(
    fc.asyncProperty(
      fc.array(alphabet, { minLength: 1, maxLength: 24 }).map((parts) => parts.join("")),
      fc.uint8Array({ maxLength: 300 }),
      async (name, content) => {
        const file = await recordingOf(path, content, name);
        const layout = multipartLayout(file);
        const body = await collect(multipartBody(file, layout, { chunkBytes: 64 }));
        const request = () =>
          new Request("http://x/", {
            method: "POST",
            body,
            headers: { "content-type": layout.contentType },
          });

        // busboy reads quoted-pairs: the backslash comes back whole, the rest as escaped.
        const strict = await readMultipart(request());
        assert.deepEqual(strict.files.length, 1);
        assert.deepEqual(strict.files[0].field, "file");
        assert.deepEqual(strict.files[0].filename, escapeFilename(name).replaceAll("\\\\", "\\"));
        assert.deepEqual(strict.files[0].contentType, "application/octet-stream");
        assert.deepEqual(strict.files[0].sha256, file.sha256);
        assert.deepEqual(strict.fields, { sha256: [file.sha256] });

        // Deno's formData() splits parameters on every ";" and "=", quoted or not (a parser
        // bug, ext/fetch/21_formdata.js parseContentDisposition), so names with them are left
        // to busboy; everything else must come through as the escaped text.
        if (/[;=]/.test(name)) return;
        const form = await request().formData();
        assert.deepEqual([...form.keys()].sort(), ["file", "sha256"]);
        const got = form.get("file") as File;
        assert.deepEqual(got.name, escapeFilename(name));
        assert.deepEqual(new Uint8Array(await got.arrayBuffer()), content);
        assert.deepEqual(form.get("sha256"), file.sha256);
      },
    ),
    { numRuns: 300 },
  );
});

Deno.test("multipartBody() stops before the sha256 part when the file's bytes changed", async () => {
  await using dir = await tempDir();
  const file = await recordingOf(`${dir.path}/a.wav`, new Uint8Array(5000).fill(1), "a.wav");
  await Deno.writeFile(file.path, new Uint8Array(5000).fill(2));
  const layout = multipartLayout(file);
  const seen: Uint8Array[] = [];
  await assert.rejects(async () => {
    for await (const chunk of multipartBody(file, layout, { chunkBytes: 1024 })) {
      seen.push(chunk.slice());
    }
  }, RecordingChangedError);
  assert.ok(!seen.some((chunk) => chunk === layout.tail || chunk.length === layout.tail.length));
  assert.deepEqual(seen.reduce((n, c) => n + c.length, 0), layout.head.length + 5000);
});

Deno.test("multipartBody() refuses a file that shrank or grew since it was attached", async () => {
  await using dir = await tempDir();
  const file = await recordingOf(`${dir.path}/a.wav`, new Uint8Array(4096).fill(1), "a.wav");
  for (const size of [4000, 5000]) {
    await Deno.writeFile(file.path, new Uint8Array(size).fill(1));
    await assert.rejects(
      () => collect(multipartBody(file, multipartLayout(file))),
      (error: Error) => error instanceof RecordingChangedError && /\b4096\b/.test(error.message),
    );
  }
});

Deno.test("sha256File() hashes a file in chunks", async () => {
  await using dir = await tempDir();
  const bytes = crypto.getRandomValues(new Uint8Array(60_000));
  await Deno.writeFile(`${dir.path}/f`, bytes);
  assert.deepEqual(await sha256File(`${dir.path}/f`, 4096), {
    sha256: createHash("sha256").update(bytes).digest("hex"),
    bytes: 60_000,
  });
});
