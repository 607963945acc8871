// Test helper: raw PostgreSQL protocol messages (type byte + int32 length + body) for framing tests.

export function wireMessage(type: string, body: Buffer | string): Buffer {
  const b = typeof body === 'string' ? Buffer.from(body) : body;
  const h = Buffer.alloc(5);
  h[0] = type.charCodeAt(0);
  h.writeInt32BE(b.length + 4, 1);
  return Buffer.concat([h, b]);
}
