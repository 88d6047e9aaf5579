// SHA3-224 (FIPS 202), the hash that names text buffer versions
// (PROTOCOL.md 3: version = lowercase hex SHA3-224 of the UTF-8 content).
// WebCrypto has no SHA3, so this is a small Keccak-f[1600] sponge.
//
// Lanes are 64 bits; JavaScript has no fast 64-bit integer, so each lane is
// two 32-bit halves in a Uint32Array: lane i is state[2i] (low) and
// state[2i+1] (high). The round constants and rotation offsets are derived
// from their definitions in FIPS 202 (3.2.2 and 3.2.5) when the module
// loads, rather than typed in as tables.

const ROUNDS = 24;
const RATE = 144; // bytes: 1600 - 2*224 bits
const DIGEST = 28; // bytes

// rcBit is rc(t) of FIPS 202 algorithm 5: the output of an 8-bit LFSR.
function rcBit(t) {
  if (t % 255 === 0) return 1;
  let r = 0x01; // R[0] is bit 0
  for (let i = 1; i <= t % 255; i++) {
    // R = 0 || R, then taps on the bit shifted out of position 7.
    const out = (r >> 7) & 1;
    r = (r << 1) & 0xff;
    if (out) r ^= 0x71; // bits 0, 4, 5, 6
  }
  return r & 1;
}

// ROUND_CONSTANTS[2i], [2i+1]: the low and high halves of round i's RC.
const ROUND_CONSTANTS = new Uint32Array(2 * ROUNDS);
for (let round = 0; round < ROUNDS; round++) {
  for (let j = 0; j <= 6; j++) {
    if (rcBit(j + 7 * round)) {
      const bit = (1 << j) - 1; // bit positions 0, 1, 3, 7, 15, 31, 63
      ROUND_CONSTANTS[2 * round + (bit >= 32 ? 1 : 0)] |= 1 << bit % 32;
    }
  }
}

// ROTATIONS[x + 5y] is the rho offset of lane (x, y).
const ROTATIONS = new Uint8Array(25);
{
  let x = 1;
  let y = 0;
  for (let t = 0; t < 24; t++) {
    ROTATIONS[x + 5 * y] = (((t + 1) * (t + 2)) / 2) % 64;
    [x, y] = [y, (2 * x + 3 * y) % 5];
  }
}

// PI_TARGET[x + 5y] is where pi moves lane (x, y): to (y, 2x + 3y).
const PI_TARGET = new Uint8Array(25);
for (let x = 0; x < 5; x++) {
  for (let y = 0; y < 5; y++) {
    PI_TARGET[x + 5 * y] = y + 5 * ((2 * x + 3 * y) % 5);
  }
}

const c = new Uint32Array(10);
const b = new Uint32Array(50);

// permute applies Keccak-f[1600] to s in place.
function permute(s) {
  for (let round = 0; round < ROUNDS; round++) {
    // theta
    for (let x = 0; x < 5; x++) {
      c[2 * x] = s[2 * x] ^ s[2 * x + 10] ^ s[2 * x + 20] ^ s[2 * x + 30] ^ s[2 * x + 40];
      c[2 * x + 1] = s[2 * x + 1] ^ s[2 * x + 11] ^ s[2 * x + 21] ^ s[2 * x + 31] ^ s[2 * x + 41];
    }
    for (let x = 0; x < 5; x++) {
      const prev = (x + 4) % 5;
      const next = (x + 1) % 5;
      // D[x] = C[x-1] ^ rot(C[x+1], 1)
      const lo = c[2 * prev] ^ ((c[2 * next] << 1) | (c[2 * next + 1] >>> 31));
      const hi = c[2 * prev + 1] ^ ((c[2 * next + 1] << 1) | (c[2 * next] >>> 31));
      for (let y = 0; y < 25; y += 5) {
        s[2 * (x + y)] ^= lo;
        s[2 * (x + y) + 1] ^= hi;
      }
    }
    // rho and pi
    for (let i = 0; i < 25; i++) {
      const lo = s[2 * i];
      const hi = s[2 * i + 1];
      const n = ROTATIONS[i];
      const to = 2 * PI_TARGET[i];
      if (n === 0) {
        b[to] = lo;
        b[to + 1] = hi;
      } else if (n < 32) {
        b[to] = (lo << n) | (hi >>> (32 - n));
        b[to + 1] = (hi << n) | (lo >>> (32 - n));
      } else if (n === 32) {
        b[to] = hi;
        b[to + 1] = lo;
      } else {
        const m = n - 32;
        b[to] = (hi << m) | (lo >>> (32 - m));
        b[to + 1] = (lo << m) | (hi >>> (32 - m));
      }
    }
    // chi
    for (let y = 0; y < 25; y += 5) {
      for (let x = 0; x < 5; x++) {
        const i = 2 * (x + y);
        const i1 = 2 * (((x + 1) % 5) + y);
        const i2 = 2 * (((x + 2) % 5) + y);
        s[i] = b[i] ^ (~b[i1] & b[i2]);
        s[i + 1] = b[i + 1] ^ (~b[i1 + 1] & b[i2 + 1]);
      }
    }
    // iota
    s[0] ^= ROUND_CONSTANTS[2 * round];
    s[1] ^= ROUND_CONSTANTS[2 * round + 1];
  }
}

// xorByte xors byte v into the state at byte offset i (lanes are little
// endian).
function xorByte(s, i, v) {
  s[2 * (i >> 3) + ((i >> 2) & 1)] ^= v << (8 * (i & 3));
}

// sha3_224 returns the SHA3-224 digest of bytes (a Uint8Array).
export function sha3_224(bytes) {
  const s = new Uint32Array(50);
  let pos = 0;
  // Absorb every full block.
  for (; pos + RATE <= bytes.length; pos += RATE) {
    for (let i = 0; i < RATE; i++) xorByte(s, i, bytes[pos + i]);
    permute(s);
  }
  // The last, partial block with the SHA3 padding: 0x06 ... 0x80.
  const rest = bytes.length - pos;
  for (let i = 0; i < rest; i++) xorByte(s, i, bytes[pos + i]);
  xorByte(s, rest, 0x06);
  xorByte(s, RATE - 1, 0x80);
  permute(s);
  const out = new Uint8Array(DIGEST);
  for (let i = 0; i < DIGEST; i++) {
    out[i] = (s[2 * (i >> 3) + ((i >> 2) & 1)] >>> (8 * (i & 3))) & 0xff;
  }
  return out;
}

const encoder = new TextEncoder();

// version returns the buffer version of text: the lowercase hex SHA3-224
// of its UTF-8 encoding.
export function version(text) {
  const digest = sha3_224(encoder.encode(text));
  let hex = "";
  for (const byte of digest) hex += byte.toString(16).padStart(2, "0");
  return hex;
}
