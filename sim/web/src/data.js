// Loading the view data (format satpage-view/1, sim/README.md): view.json names the
// arrays, view.bin.gz holds them (little-endian, 8-byte aligned, one gzip stream).
// Sources: the loopback server (fetch) or a self-contained page (inline base64).

const TYPES = {
  '<i2': Int16Array, '<i4': Int32Array, '<u4': Uint32Array, '<f4': Float32Array,
  '<f8': Float64Array, '|u1': Uint8Array, '|i1': Int8Array,
};

export const FORMAT = 'satpage-view/1';

async function inflate(bytes) {
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).arrayBuffer();
}

function b64bytes(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** The view: {meta, a: {name: TypedArray}, shape: {name: [...]}} */
export async function loadView(base = '') {
  let head;
  let gz;
  const inline = globalThis.SATPAGE_VIEW_INLINE;
  if (inline) {
    head = inline.head;
    gz = b64bytes(inline.blob);
  } else {
    const r = await fetch(base + 'view.json');
    if (!r.ok) throw new Error(`view.json: HTTP ${r.status}`);
    head = await r.json();
    const b = await fetch(base + head.blob);
    if (!b.ok) throw new Error(`${head.blob}: HTTP ${b.status}`);
    gz = new Uint8Array(await b.arrayBuffer());
  }
  if (head.format !== FORMAT) throw new Error(`format ${head.format}, this page reads ${FORMAT}`);
  const buf = await inflate(gz);
  if (buf.byteLength !== head.blob_bytes) {
    throw new Error(`view blob has ${buf.byteLength} bytes, view.json says ${head.blob_bytes}`);
  }
  const a = {};
  const shape = {};
  for (const [name, d] of Object.entries(head.arrays)) {
    const T = TYPES[d.dtype];
    if (!T) throw new Error(`array ${name}: dtype ${d.dtype} unknown`);
    const n = d.shape.reduce((x, y) => x * y, 1);
    a[name] = new T(buf, d.offset, n);
    shape[name] = d.shape;
  }
  return { meta: head, a, shape };
}
