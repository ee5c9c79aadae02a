// SHA-256 of a short text, in plain TypeScript, for names derived from a path on a path every
// run takes (the snapshot's stat cache is named by its directory's digest). node:crypto would do
// it in one call, but loading it costs each process ~19 ms of CPU (`deno task bench startup`,
// "loading node:crypto"; and `deno task bench engine` "a whole reins run"). Contents are still hashed by node:crypto,
// imported when there is content to hash (lib/snapshot/take.ts).

const K = new Uint32Array([
  0x428a2f98,
  0x71374491,
  0xb5c0fbcf,
  0xe9b5dba5,
  0x3956c25b,
  0x59f111f1,
  0x923f82a4,
  0xab1c5ed5,
  0xd807aa98,
  0x12835b01,
  0x243185be,
  0x550c7dc3,
  0x72be5d74,
  0x80deb1fe,
  0x9bdc06a7,
  0xc19bf174,
  0xe49b69c1,
  0xefbe4786,
  0x0fc19dc6,
  0x240ca1cc,
  0x2de92c6f,
  0x4a7484aa,
  0x5cb0a9dc,
  0x76f988da,
  0x983e5152,
  0xa831c66d,
  0xb00327c8,
  0xbf597fc7,
  0xc6e00bf3,
  0xd5a79147,
  0x06ca6351,
  0x14292967,
  0x27b70a85,
  0x2e1b2138,
  0x4d2c6dfc,
  0x53380d13,
  0x650a7354,
  0x766a0abb,
  0x81c2c92e,
  0x92722c85,
  0xa2bfe8a1,
  0xa81a664b,
  0xc24b8b70,
  0xc76c51a3,
  0xd192e819,
  0xd6990624,
  0xf40e3585,
  0x106aa070,
  0x19a4c116,
  0x1e376c08,
  0x2748774c,
  0x34b0bcb5,
  0x391c0cb3,
  0x4ed8aa4a,
  0x5b9cca4f,
  0x682e6ff3,
  0x748f82ee,
  0x78a5636f,
  0x84c87814,
  0x8cc70208,
  0x90befffa,
  0xa4506ceb,
  0xbef9a3f7,
  0xc67178f2,
]);

function rotr(x: number, n: number): number {
  return (x >>> n) | (x << (32 - n));
}

const encoder = new TextEncoder();
/** The padded message, reused (grown when a message needs more). */
let padded = new Uint8Array(256);
const w = new Uint32Array(64);
const h = new Uint32Array(8);
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"));

/**
 * The SHA-256 of `input` (a text is hashed as UTF-8), as 64 lowercase hex digits. Allocates
 * nothing but its answer for a short text: a trace export hashes a third of a million span ids
 * (lib/otel/ids.ts).
 */
export function sha256Hex(input: string | Uint8Array): string {
  // The message, a 1 bit, zeros, and its length in bits (64-bit big-endian), in 64-byte blocks.
  const most = typeof input === "string" ? input.length * 3 : input.length;
  if (padded.length < most + 72) padded = new Uint8Array(Math.max(most + 72, padded.length * 2));
  let length: number;
  if (typeof input === "string") length = encoder.encodeInto(input, padded).written;
  else {
    padded.set(input);
    length = input.length;
  }
  const blocks = Math.ceil((length + 9) / 64);
  const end = blocks * 64;
  padded.fill(0, length, end);
  padded[length] = 0x80;
  const bits = length * 8;
  const high = Math.floor(bits / 0x1_0000_0000);
  const low = bits >>> 0;
  padded[end - 8] = high >>> 24;
  padded[end - 7] = (high >>> 16) & 0xff;
  padded[end - 6] = (high >>> 8) & 0xff;
  padded[end - 5] = high & 0xff;
  padded[end - 4] = low >>> 24;
  padded[end - 3] = (low >>> 16) & 0xff;
  padded[end - 2] = (low >>> 8) & 0xff;
  padded[end - 1] = low & 0xff;
  h[0] = 0x6a09e667;
  h[1] = 0xbb67ae85;
  h[2] = 0x3c6ef372;
  h[3] = 0xa54ff53a;
  h[4] = 0x510e527f;
  h[5] = 0x9b05688c;
  h[6] = 0x1f83d9ab;
  h[7] = 0x5be0cd19;
  for (let block = 0; block < blocks; block++) {
    const at = block * 64;
    for (let i = 0; i < 16; i++) {
      const j = at + i * 4;
      w[i] = (padded[j] << 24) | (padded[j + 1] << 16) | (padded[j + 2] << 8) | padded[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >>> 3);
      const s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >>> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (let i = 0; i < 64; i++) {
      const t1 = (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[i] +
        w[i]) >>> 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) >>> 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) >>> 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) >>> 0;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
  }
  let hex = "";
  for (let i = 0; i < 8; i++) {
    const word = h[i];
    hex += HEX[word >>> 24] + HEX[(word >>> 16) & 0xff] + HEX[(word >>> 8) & 0xff] +
      HEX[word & 0xff];
  }
  return hex;
}
