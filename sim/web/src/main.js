// `satpage view`: the constellation over the population backdrop, ISL load, clients and
// one session's pages along its trail of satellites, per strategy. Canvas 2D: the static
// layers (population, land, graticule) are drawn once into an offscreen canvas; a frame
// is one drawImage plus batched paths (one path per colour), so 4,408 satellites and
// ~9,000 links redraw in a few milliseconds.
import { geoEquirectangular, geoPath, geoGraticule10, geoCircle } from 'd3-geo';
import { feature } from 'topojson-client';
import land110 from 'world-atlas/land-110m.json';
import { loadView } from './data.js';

const $ = (id) => document.getElementById(id);
const LOAD_COLOURS = ['#3b528b', '#21918c', '#5ec962', '#b5de2b', '#fde725', '#ff7f0e', '#d62728'];
// twelve: the ten built-in strategies and plugins beside them keep distinct swatches
const STRATEGY_COLOURS = ['#e377c2', '#17becf', '#ff7f0e', '#9467bd', '#2ca02c', '#8c564b',
  '#bcbd22', '#1f77b4', '#d62728', '#7f7f7f', '#aec7e8', '#98df8a'];
const GROUND = -2;

const hook = { ready: false, error: null, drawMs: [], frame: 0 };
globalThis.satpageView = hook;

const st = {
  v: null, frame: 0, strategy: 0, session: -1, playing: false, timer: null,
  show: { footprints: true, links: true, clients: true },
  W: 0, H: 0, bg: null, hover: null,
};

function fmt(x, digits = 0) {
  if (x === undefined || x === null || Number.isNaN(x)) return '–';
  if (Math.abs(x) >= 1e6) return x.toExponential(2);
  return x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

function hms(s) {
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = Math.floor(s % 60);
  return `${h}:${String(m).padStart(2, '0')}:${String(sec).padStart(2, '0')}`;
}

// -- geometry: equirectangular, x east, y south, the canvas's CSS pixels --------------
const px = (lon) => ((lon + 180) / 360) * st.W;
const py = (lat) => ((90 - lat) / 180) * st.H;

function satLatLon(frame, i) {
  const a = st.v.a.sat_latlon_cdeg;
  const o = (frame * st.v.meta.satellites + i) * 2;
  return [a[o] / 100, a[o + 1] / 100];
}

function windowOf(tS) {
  const e = st.v.a.window_edges_s;
  let lo = 0;
  let hi = e.length - 2;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (e[mid] <= tS) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// -- static layers -------------------------------------------------------------------
function buildBackground() {
  // its own canvas under the map canvas: drawn once per resize, never per frame
  const { W, H } = st;
  const c = $('bgmap');
  c.width = W * st.dpr; c.height = H * st.dpr;
  c.style.width = `${W}px`; c.style.height = `${H}px`;
  const g = c.getContext('2d');
  g.setTransform(st.dpr, 0, 0, st.dpr, 0, 0);
  g.fillStyle = '#0a1626';
  g.fillRect(0, 0, W, H);
  const proj = geoEquirectangular().scale(W / (2 * Math.PI)).translate([W / 2, H / 2]);
  const path = geoPath(proj, g);
  const land = feature(land110, land110.objects.land);
  g.beginPath(); path(land); g.fillStyle = '#1c2a24'; g.fill();
  // population: log density, transparent where nobody lives
  const meta = st.v.meta.population;
  const [rows, cols] = st.v.shape.population;
  const pop = st.v.a.population;
  const img = new ImageData(cols, rows);
  for (let i = 0; i < rows * cols; i++) {
    const q = pop[i];
    if (q === 0) continue;
    const t = q / 255;
    img.data[4 * i] = 40 + 215 * t;
    img.data[4 * i + 1] = 60 + 150 * t * t;
    img.data[4 * i + 2] = 90 - 60 * t;
    img.data[4 * i + 3] = 60 + 195 * t;
  }
  const tmp = document.createElement('canvas');
  tmp.width = cols; tmp.height = rows;
  tmp.getContext('2d').putImageData(img, 0, 0);
  const x0 = px(meta.west_deg);
  const y0 = py(meta.north_deg);
  g.imageSmoothingEnabled = false;
  g.drawImage(tmp, x0, y0, px(meta.west_deg + cols * meta.cell_size_deg) - x0,
    py(meta.north_deg - rows * meta.cell_size_deg) - y0);
  g.beginPath(); path(land); g.strokeStyle = '#6f8f80'; g.lineWidth = 0.7; g.stroke();
  g.beginPath(); path(geoGraticule10()); g.strokeStyle = 'rgba(255,255,255,0.07)'; g.stroke();
  st.path = geoPath(proj);
}

function resize() {
  const canvas = $('map');
  const box = $('mapbox');
  const W = Math.max(400, Math.floor(box.clientWidth));
  const H = Math.floor(W / 2);
  const dpr = window.devicePixelRatio || 1;
  canvas.width = W * dpr; canvas.height = H * dpr;
  canvas.style.width = `${W}px`; canvas.style.height = `${H}px`;
  st.W = W; st.H = H; st.dpr = dpr;
  $('mapwrap').style.height = `${H}px`;
  buildBackground();
  draw();
}

// -- the frame -----------------------------------------------------------------------
function loadScale(s) {
  // colour scale of links: pages per window (log), or utilisation when capacities exist
  const v = st.v;
  const cap = v.a.link_capacity_bytes_per_s;
  const L = v.shape.links[0];
  const Wn = v.shape.window_edges_s[0] - 1;
  if (!st.loadMax) st.loadMax = {};
  if (st.loadMax[s] === undefined) {
    let m = 0;
    const arr = v.a.link_load_pages;
    for (let i = s * Wn * L; i < (s + 1) * Wn * L; i++) if (arr[i] > m) m = arr[i];
    st.loadMax[s] = m;
  }
  return { cap, max: st.loadMax[s], L, Wn, bg: v.a.link_background_util };
}

function linkValue(s, w, l) {
  const v = st.v;
  const { cap, L, Wn, bg } = loadScale(s);
  const pages = v.a.link_load_pages[(s * Wn + w) * L + l];
  const e = v.a.window_edges_s;
  const bytesPerS = (pages * v.meta.page_bytes) / (e[w + 1] - e[w]);
  // as satpage.linkmodel.LinkModel.utilisation: background plus this strategy's pages
  const util = cap ? (bg ? bg[w * L + l] : 0) + bytesPerS / cap[l] : null;
  return { pages, bytesPerS, util };
}

function draw() {
  const t0 = performance.now();
  const v = st.v;
  if (!v) return;
  const canvas = $('map');
  const g = canvas.getContext('2d');
  g.setTransform(st.dpr, 0, 0, st.dpr, 0, 0);
  g.clearRect(0, 0, st.W, st.H);
  const parts = {};
  let tp = performance.now();
  const mark = (name) => { const now = performance.now(); parts[name] = now - tp; tp = now; };
  const f = st.frame;
  const N = v.meta.satellites;
  const tS = v.a.frame_t_s[f];
  const w = windowOf(tS);
  const s = st.strategy;
  const ll = v.a.sat_latlon_cdeg;
  const base = f * N * 2;
  const X = st.X || (st.X = new Float32Array(N));
  const Y = st.Y || (st.Y = new Float32Array(N));
  const kx = st.W / 36000;
  const ky = st.H / 18000;
  for (let i = 0; i < N; i++) {
    Y[i] = (9000 - ll[base + 2 * i]) * ky;
    X[i] = (ll[base + 2 * i + 1] + 18000) * kx;
  }
  const half = st.W / 2;
  mark('positions');
  if (st.show.footprints && st.naive) {
    // the baseline of bench/bench_view.py: one ellipse path per footprint
    const fr = v.a.footprint_rad;
    const kr = st.H / Math.PI;
    g.beginPath();
    for (let i = 0; i < N; i++) {
      const ry = fr[i] * kr;
      const rx = Math.min(ry / Math.max(Math.cos((ll[base + 2 * i] / 18000) * Math.PI), 0.05), half);
      g.moveTo(X[i] + rx, Y[i]);
      g.ellipse(X[i], Y[i], rx, ry, 0, 0, 2 * Math.PI);
    }
    g.fillStyle = 'rgba(120,170,255,0.05)';
    g.fill();
    g.strokeStyle = 'rgba(120,170,255,0.22)';
    g.lineWidth = 0.5;
    g.stroke();
  } else if (st.show.footprints) {
    drawCoverage(g, f);
    if (N <= 1000) {
      // individual outlines while they stay readable (the paper's 150 satellites)
      const fr = v.a.footprint_rad;
      const kr = st.H / Math.PI;
      g.beginPath();
      for (let i = 0; i < N; i++) {
        const ry = fr[i] * kr;
        const lat = ll[base + 2 * i] / 100;
        const rx = Math.min(ry / Math.max(Math.cos((lat * Math.PI) / 180), 0.05), half);
        g.moveTo(X[i] + rx, Y[i]);
        g.ellipse(X[i], Y[i], rx, ry, 0, 0, 2 * Math.PI);
      }
      g.strokeStyle = 'rgba(120,170,255,0.25)';
      g.lineWidth = 0.5;
      g.stroke();
    }
  }
  mark('footprints');
  if (st.show.links) {
    const links = v.a.links;
    const { cap, max, L, Wn, bg } = loadScale(s);
    const load = v.a.link_load_pages;
    const lb = (s * Wn + w) * L;
    const e = v.a.window_edges_s;
    const toBps = v.meta.page_bytes / (e[w + 1] - e[w]);
    const lmax = Math.log1p(max || 1);
    const nc = LOAD_COLOURS.length;
    const byUtil = st.linkMetric === 'util' && cap;
    const buckets = LOAD_COLOURS.map(() => []);
    g.beginPath();
    for (let l = 0; l < L; l++) {
      const a = links[2 * l];
      const b = links[2 * l + 1];
      if (Math.abs(X[a] - X[b]) > half) continue;       // across the date line
      const p = load[lb + l];
      let t;
      if (byUtil) {
        t = (bg ? bg[w * L + l] : 0) + (p * toBps) / cap[l];
        if (t <= 0) { g.moveTo(X[a], Y[a]); g.lineTo(X[b], Y[b]); continue; }
      } else {
        if (p === 0) { g.moveTo(X[a], Y[a]); g.lineTo(X[b], Y[b]); continue; }
        t = Math.log1p(p) / lmax;
      }
      buckets[Math.min(nc - 1, Math.floor(Math.min(t, 1) * nc))].push(l);
    }
    // width 1: Skia's hairline path, 50x cheaper to rasterise in software than 1.6
    // (112 ms for 8,816 links in headless chromium); colour carries the load
    g.strokeStyle = 'rgba(160,180,200,0.13)';
    g.lineWidth = 1;
    g.stroke();
    if (st.naive) g.lineWidth = 1.6;
    buckets.forEach((ls, c) => {
      if (!ls.length) return;
      g.beginPath();
      for (const l of ls) { g.moveTo(X[links[2 * l]], Y[links[2 * l]]); g.lineTo(X[links[2 * l + 1]], Y[links[2 * l + 1]]); }
      g.strokeStyle = LOAD_COLOURS[c];
      g.stroke();
    });
  }
  mark('links');
  if (st.show.clients) {
    const cl = v.a.client_latlon_cdeg;
    const ct = v.a.client_t_s;
    const C = v.shape.client_latlon_cdeg[0];
    g.fillStyle = 'rgba(255,80,80,0.8)';
    for (let i = 0; i < C; i++) {
      if (ct[2 * i] > tS || ct[2 * i + 1] < tS) continue;
      g.fillRect((cl[2 * i + 1] + 18000) * kx - 1, (9000 - cl[2 * i]) * ky - 1, 2, 2);
    }
  }
  if (st.show.clients) {
    // the sampled sessions' clients, active now: rings, click one to select its session
    const sl = v.a.sess_latlon_cdeg;
    const stt = v.a.sess_t_s;
    const K = v.shape.sess_index[0];
    g.beginPath();
    for (let k = 0; k < K; k++) {
      if (stt[2 * k] > tS || stt[2 * k + 1] < tS) continue;
      const x = (sl[2 * k + 1] + 18000) * kx;
      const y = (9000 - sl[2 * k]) * ky;
      g.moveTo(x + 4, y);
      g.arc(x, y, 4, 0, 2 * Math.PI);
    }
    g.strokeStyle = 'rgba(127,255,212,0.85)';
    g.lineWidth = 1;
    g.stroke();
  }
  mark('clients');
  // satellites: those holding pages of the shown strategy in this window stand out
  const held = v.a.held_pages;
  const hb = (s * (v.shape.window_edges_s[0] - 1) + w) * N;
  // fillRect per satellite: half the raster time of one path of 4,408 rectangles
  if (st.naive) {
    g.beginPath();
    for (let i = 0; i < N; i++) g.rect(X[i] - 1.5, Y[i] - 1.5, 3, 3);
    g.fillStyle = '#e8eef5';
    g.fill();
  }
  g.fillStyle = '#e8eef5';
  for (let i = 0; i < N; i++) if (held[hb + i] <= 0) g.fillRect(X[i] - 1.5, Y[i] - 1.5, 3, 3);
  g.fillStyle = '#39d0ff';
  for (let i = 0; i < N; i++) if (held[hb + i] > 0) g.fillRect(X[i] - 2, Y[i] - 2, 4, 4);
  mark('satellites');
  drawSession(g, f, X, Y);
  if (st.hover) drawHover(g, X, Y);
  mark('session');
  updatePanels(w);
  mark('panels');
  hook.drawMs.push(performance.now() - t0);
  hook.parts = parts;
  hook.frame = f;
  $('time').textContent = `t = ${hms(tS)} (frame ${f + 1}/${v.a.frame_t_s.length}, window ${w + 1})`;
}


// Coverage: how many satellites see each 1 deg cell above the minimum elevation,
// exact on the sphere (per row, the longitudes within the footprint's central angle),
// accumulated as run-length differences: O(satellites x rows), not x cells, so 4,408
// footprints cost about a millisecond; drawn as one scaled image, not 4,408 paths.
const COV_COLS = 360;
const COV_ROWS = 180;
function drawCoverage(g, f) {
  const v = st.v;
  const N = v.meta.satellites;
  if (!st.cov) {
    const sinPhi = new Float64Array(COV_ROWS);
    const cosPhi = new Float64Array(COV_ROWS);
    for (let row = 0; row < COV_ROWS; row++) {
      const phi = Math.PI / 2 - ((row + 0.5) * Math.PI) / COV_ROWS;
      sinPhi[row] = Math.sin(phi);
      cosPhi[row] = Math.cos(phi);
    }
    st.cov = {
      sinPhi, cosPhi, cosR: Float64Array.from(v.a.footprint_rad, Math.cos),
      diff: new Int32Array(COV_ROWS * (COV_COLS + 1)),
      canvas: Object.assign(document.createElement('canvas'), { width: COV_COLS, height: COV_ROWS }),
      img: new ImageData(COV_COLS, COV_ROWS),
    };
  }
  const { diff, canvas, img } = st.cov;
  if (st.cov.frame === f) {            // hover redraws reuse the frame's coverage
    g.imageSmoothingEnabled = false;
    g.drawImage(canvas, 0, 0, st.W, st.H);
    return;
  }
  st.cov.frame = f;
  diff.fill(0);
  const ll = v.a.sat_latlon_cdeg;
  const fr = v.a.footprint_rad;
  const base = f * N * 2;
  const cell = Math.PI / COV_ROWS;
  const W1 = COV_COLS + 1;
  const colsPerRad = COV_COLS / (2 * Math.PI);
  const { sinPhi, cosPhi, cosR } = st.cov;
  for (let i = 0; i < N; i++) {
    const lat = (ll[base + 2 * i] / 18000) * Math.PI;
    const lon = (ll[base + 2 * i + 1] / 18000) * Math.PI;
    const r = fr[i];
    const cr = cosR[i];
    const sl = Math.sin(lat);
    const cl = Math.cos(lat);
    const r0 = Math.max(0, Math.floor((Math.PI / 2 - lat - r) / cell));
    const r1 = Math.min(COV_ROWS - 1, Math.floor((Math.PI / 2 - lat + r) / cell));
    const mid = (lon + Math.PI) * colsPerRad;
    for (let row = r0; row <= r1; row++) {
      const c = (cr - sl * sinPhi[row]) / (cl * cosPhi[row] || 1e-12);
      if (c > 1) continue;
      const dl = (c <= -1 ? Math.PI : Math.acos(c)) * colsPerRad;
      let a = Math.floor(mid - dl);
      let b = Math.floor(mid + dl);
      if (b - a >= COV_COLS - 1) { a = 0; b = COV_COLS - 1; }
      const o = row * W1;
      if (a < 0) {
        diff[o + a + COV_COLS] += 1; diff[o + COV_COLS] -= 1; a = 0;
      }
      if (b >= COV_COLS) {
        diff[o] += 1; diff[o + b - COV_COLS + 1] -= 1; b = COV_COLS - 1;
      }
      diff[o + a] += 1; diff[o + b + 1] -= 1;
    }
  }
  // one 32-bit write per cell (little-endian RGBA): uncovered cells darken the map,
  // covered ones are tinted more the more satellites see them
  const px32 = new Uint32Array(img.data.buffer);
  const UNCOVERED = (70 << 24) >>> 0;
  const tint = new Uint32Array(8);
  for (let n = 1; n < 8; n++) tint[n] = (((14 + Math.round((40 * Math.min(n, 6)) / 6)) << 24) | (255 << 16) | (150 << 8) | 90) >>> 0;
  for (let row = 0; row < COV_ROWS; row++) {
    let n = 0;
    const o = row * W1;
    const q = row * COV_COLS;
    for (let col = 0; col < COV_COLS; col++) {
      n += diff[o + col];
      px32[q + col] = n === 0 ? UNCOVERED : tint[n < 7 ? n : 7];
    }
  }
  canvas.getContext('2d').putImageData(img, 0, 0);
  g.imageSmoothingEnabled = false;      // nearest: a fraction of the cost of bilinear in software
  g.drawImage(canvas, 0, 0, st.W, st.H);
}

// -- sessions ------------------------------------------------------------------------
function sessionInfo(k, strategy, frame) {
  const v = st.v;
  const a = v.a;
  const vo = a.sess_visit_offsets;
  const tS = a.frame_t_s[frame];
  let serving = -1;
  const trail = [];
  const started = tS >= a.sess_t_s[2 * k];
  for (let j = vo[k]; j < vo[k + 1] && started; j++) {
    if (a.visit_start_s[j] <= tS) {
      serving = a.visit_sat[j];
      trail.push(serving);
    }
  }
  const K = v.shape.sess_index[0];
  const off = a.hold_offsets;
  const holders = [];
  for (let r = off[strategy * (K + 1) + k]; r < off[strategy * (K + 1) + k + 1]; r++) {
    if (a.hold_frame[r] === frame) holders.push({ sat: a.hold_sat[r], pages: a.hold_pages[r] });
  }
  holders.sort((x, y) => y.pages - x.pages);
  const active = started && tS <= a.sess_t_s[2 * k + 1];
  const phase = !started ? 'not started' : (active ? 'active' : 'ended');
  return { serving, trail, holders, active, phase };
}

function drawSession(g, f, X, Y) {
  const k = st.session;
  if (k < 0) return;
  const a = st.v.a;
  const info = sessionInfo(k, st.strategy, f);
  const cx = px(a.sess_latlon_cdeg[2 * k + 1] / 100);
  const cy = py(a.sess_latlon_cdeg[2 * k] / 100);
  // trail in visit order, at the satellites' current positions
  const uniq = [...new Set(info.trail)];
  g.lineWidth = 1.5;
  g.strokeStyle = 'rgba(255,90,200,0.9)';
  g.setLineDash([4, 3]);
  g.beginPath();
  uniq.forEach((sat, i) => {
    // a hop across the date line is not drawn across the whole map
    if (i && Math.abs(X[sat] - X[uniq[i - 1]]) < st.W / 2) g.lineTo(X[sat], Y[sat]);
    else g.moveTo(X[sat], Y[sat]);
  });
  g.stroke();
  g.setLineDash([]);
  for (const h of info.holders) {
    const r = 3 + 2.2 * Math.sqrt(h.pages / 10);
    const x = h.sat === GROUND ? cx : X[h.sat];
    const y = h.sat === GROUND ? cy + 14 : Y[h.sat];
    g.beginPath(); g.arc(x, y, r, 0, 2 * Math.PI);
    g.fillStyle = 'rgba(255,90,200,0.35)'; g.fill();
    g.strokeStyle = '#ff5ac8'; g.lineWidth = 1.2; g.stroke();
    g.fillStyle = '#fff'; g.font = '11px sans-serif';
    g.fillText(`${h.sat === GROUND ? 'ground' : '#' + h.sat}: ${h.pages}`, x + r + 2, y - 2);
  }
  if (info.serving >= 0) {
    const sx = X[info.serving];
    const sy = Y[info.serving];
    g.beginPath(); g.moveTo(cx, cy); g.lineTo(sx, sy);
    g.strokeStyle = info.active ? '#7fffd4' : 'rgba(127,255,212,0.4)'; g.lineWidth = 2; g.stroke();
    g.beginPath(); g.arc(sx, sy, 7, 0, 2 * Math.PI); g.strokeStyle = '#7fffd4'; g.stroke();
    // the serving satellite's footprint on the sphere (d3 geoCircle)
    const [lat, lon] = satLatLon(f, info.serving);
    const circle = geoCircle().center([lon, lat]).radius((st.v.a.footprint_rad[info.serving] * 180) / Math.PI)();
    g.beginPath(); st.path.context(g)(circle); st.path.context(null);
    g.strokeStyle = 'rgba(127,255,212,0.8)'; g.lineWidth = 1; g.stroke();
  }
  g.beginPath(); g.arc(cx, cy, 5, 0, 2 * Math.PI); g.fillStyle = '#7fffd4'; g.fill();
  g.strokeStyle = '#000'; g.lineWidth = 1; g.stroke();
}

// -- hover and click -----------------------------------------------------------------
function pick(mx, my) {
  const v = st.v;
  const N = v.meta.satellites;
  let best = -1;
  let bd = 64;
  for (let i = 0; i < N; i++) {
    const d = (st.X[i] - mx) ** 2 + (st.Y[i] - my) ** 2;
    if (d < bd) { bd = d; best = i; }
  }
  const a = v.a;
  const K = v.shape.sess_index[0];
  let sess = -1;
  let sd = 49;
  for (let k = 0; k < K; k++) {
    const d = (px(a.sess_latlon_cdeg[2 * k + 1] / 100) - mx) ** 2 + (py(a.sess_latlon_cdeg[2 * k] / 100) - my) ** 2;
    if (d < sd) { sd = d; sess = k; }
  }
  if (sess >= 0 && sd <= bd) return { kind: 'session', id: sess };
  if (best >= 0) return { kind: 'sat', id: best };
  // nearest link within 4 px
  let link = -1;
  let ld = 16;
  const links = a.links;
  const L = v.shape.links[0];
  for (let l = 0; l < L; l++) {
    const p = links[2 * l];
    const q = links[2 * l + 1];
    const x1 = st.X[p]; const y1 = st.Y[p]; const x2 = st.X[q]; const y2 = st.Y[q];
    if (Math.abs(x1 - x2) > st.W / 2) continue;
    const dx = x2 - x1; const dy = y2 - y1;
    const u = Math.max(0, Math.min(1, ((mx - x1) * dx + (my - y1) * dy) / (dx * dx + dy * dy || 1)));
    const d = (x1 + u * dx - mx) ** 2 + (y1 + u * dy - my) ** 2;
    if (d < ld) { ld = d; link = l; }
  }
  if (link >= 0) return { kind: 'link', id: link };
  return null;
}

function describe(h) {
  const v = st.v;
  const a = v.a;
  const f = st.frame;
  const w = windowOf(a.frame_t_s[f]);
  const Wn = v.shape.window_edges_s[0] - 1;
  const N = v.meta.satellites;
  const names = v.meta.strategies;
  if (h.kind === 'sat') {
    const [lat, lon] = satLatLon(f, h.id);
    const rows = names.map((n, s) => `<tr><td>${n}</td><td>${fmt(a.held_pages[(s * Wn + w) * N + h.id])}</td></tr>`).join('');
    return `<b>satellite ${h.id}</b> (shell ${a.sat_shell[h.id]}, plane ${a.sat_plane[h.id]})<br>`
      + `lat ${lat.toFixed(2)}°, lon ${lon.toFixed(2)}°<br>footprint radius ${fmt(a.footprint_rad[h.id] * 6371, 0)} km`
      + `<table><tr><th>strategy</th><th>pages held</th></tr>${rows}</table>`;
  }
  if (h.kind === 'link') {
    const rows = names.map((n, s) => {
      const lv = linkValue(s, w, h.id);
      return `<tr><td>${n}</td><td>${fmt(lv.pages)}</td><td>${fmt(lv.bytesPerS, 1)}</td>`
        + `<td>${lv.util === null ? '–' : fmt(100 * lv.util, 2) + ' %'}</td></tr>`;
    }).join('');
    return `<b>ISL ${a.links[2 * h.id]} – ${a.links[2 * h.id + 1]}</b>, window ${w + 1}`
      + `<table><tr><th>strategy</th><th>pages</th><th>B/s</th><th>util.</th></tr>${rows}</table>`;
  }
  const k = h.id;
  return `<b>session ${a.sess_index[k]}</b> (click to select)<br>`
    + `${hms(a.sess_t_s[2 * k])} – ${hms(a.sess_t_s[2 * k + 1])}, `
    + `${a.sess_visit_offsets[k + 1] - a.sess_visit_offsets[k]} serving satellites`;
}

function drawHover(g, X, Y) {
  const h = st.hover;
  g.strokeStyle = '#fff';
  g.lineWidth = 1.5;
  if (h.kind === 'sat') { g.beginPath(); g.arc(X[h.id], Y[h.id], 6, 0, 2 * Math.PI); g.stroke(); }
  if (h.kind === 'link') {
    const l = st.v.a.links;
    g.beginPath(); g.moveTo(X[l[2 * h.id]], Y[l[2 * h.id]]); g.lineTo(X[l[2 * h.id + 1]], Y[l[2 * h.id + 1]]);
    g.lineWidth = 3; g.stroke();
  }
}

// -- panels --------------------------------------------------------------------------
function updatePanels(w) {
  const key = `${st.frame}/${st.strategy}/${st.session}`;
  if (key === st.panelKey) return;
  st.panelKey = key;
  const v = st.v;
  const a = v.a;
  const names = v.meta.strategies;
  const Wn = v.shape.window_edges_s[0] - 1;
  const N = v.meta.satellites;
  const L = v.shape.links[0];
  const e = a.window_edges_s;
  // cost figures of the window, per strategy (whole run) and for the selected session
  const k = st.session;
  const K = v.shape.sess_index[0];
  let rows = '';
  names.forEach((n, s) => {
    let hops = 0;
    let peak = 0;
    for (let l = 0; l < L; l++) {
      const p = a.link_load_pages[(s * Wn + w) * L + l];
      hops += p;
      if (p > peak) peak = p;
    }
    let held = 0;
    let hmax = 0;
    for (let i = 0; i < N; i++) {
      const h = a.held_pages[(s * Wn + w) * N + i];
      held += h;
      if (h > hmax) hmax = h;
    }
    const sm = k >= 0 ? a.sess_window_moves[(s * K + k) * Wn + w] : null;
    rows += `<tr class="${s === st.strategy ? 'sel' : ''}" data-s="${s}"><td><span class="sw" style="background:${STRATEGY_COLOURS[s % STRATEGY_COLOURS.length]}"></span>${n}</td>`
      + `<td>${fmt(hops)}</td><td>${fmt(peak)}</td><td>${fmt(held)}</td><td>${fmt(hmax)}</td>`
      + `<td>${sm === null ? '–' : fmt(sm)}</td></tr>`;
  });
  $('window').innerHTML = `<div class="h">window ${w + 1}/${Wn}: ${hms(e[w])} – ${hms(e[w + 1])}</div>`
    + '<table><tr><th>strategy</th><th title="page-hops over ISLs in the window">ISL page-hops</th>'
    + '<th title="pages over the busiest link in the window">peak link</th>'
    + '<th title="pages held on all satellites at the window end, stale trail included">held</th>'
    + '<th title="most pages held by one satellite">max/sat</th>'
    + '<th title="page movements of the selected session in the window">session moves</th></tr>'
    + rows + '</table>';
  document.querySelectorAll('#window tr[data-s]').forEach((tr) => {
    tr.onclick = () => { setStrategy(Number(tr.dataset.s)); };
  });
  // the selected session, per strategy side by side
  const box = $('session');
  if (k < 0) { box.innerHTML = '<div class="h">no session selected</div><p>Pick one in the list or click a client marked by a ring.</p>'; return; }
  const counters = v.meta.session_counters;
  const C = counters.length;
  let html = `<div class="h">session ${a.sess_index[k]}: ${hms(a.sess_t_s[2 * k])} – ${hms(a.sess_t_s[2 * k + 1])}, `
    + `client ${(a.sess_latlon_cdeg[2 * k] / 100).toFixed(2)}°, ${(a.sess_latlon_cdeg[2 * k + 1] / 100).toFixed(2)}°</div><div class="cols">`;
  names.forEach((n, s) => {
    const info = sessionInfo(k, s, st.frame);
    const total = info.holders.reduce((x, h) => x + h.pages, 0);
    const c = (name) => a.sess_counters[(s * K + k) * C + counters.indexOf(name)];
    const moves = c('fault_moves') + c('handover_moves') + c('push_moves');
    html += `<div class="col${s === st.strategy ? ' sel' : ''}" data-s="${s}"><div class="sn" style="border-color:${STRATEGY_COLOURS[s % STRATEGY_COLOURS.length]}">${n}</div>`
      + `<canvas class="mini" width="${MINI_W}" height="${MINI_H}"></canvas>`
      + `<div class="small">${info.serving >= 0 ? 'serving #' + info.serving : ''} (${info.phase})<br>trail ${[...new Set(info.trail)].map((x) => '#' + x).join(' → ')}</div>`;
    for (const h of info.holders) {
      const wpx = total ? Math.max(2, Math.round((90 * h.pages) / total)) : 0;
      html += `<div class="bar"><span class="lab">${h.sat === GROUND ? 'ground' : '#' + h.sat}${h.sat === info.serving ? '*' : ''}</span>`
        + `<span class="b" style="width:${wpx}px"></span>${h.pages}</div>`;
    }
    html += `<div class="small">moves ${fmt(moves)} (faults ${fmt(c('fault_moves'))}), trail hops ${fmt(c('trail_hops'))}, hits ${fmt(c('hits'))}/${fmt(c('accesses'))}</div></div>`;
  });
  box.innerHTML = html + '</div>';
  box.querySelectorAll('.col').forEach((el) => { el.onclick = () => setStrategy(Number(el.dataset.s)); });
  drawMinis(k, box);
}

// One small map per strategy, side by side: the session's client, trail and holders
// (disc area ~ pages) over the same crop of the backdrop.
const MINI_W = 200;
const MINI_H = 120;
function drawMinis(k, box) {
  const v = st.v;
  const a = v.a;
  const names = v.meta.strategies;
  const infos = names.map((_, s) => sessionInfo(k, s, st.frame));
  const cx = px(a.sess_latlon_cdeg[2 * k + 1] / 100);
  const cy = py(a.sess_latlon_cdeg[2 * k] / 100);
  const xs = [cx];
  const ys = [cy];
  for (const info of infos) {
    for (const sat of info.trail) { xs.push(st.X[sat]); ys.push(st.Y[sat]); }
    for (const h of info.holders) if (h.sat >= 0) { xs.push(st.X[h.sat]); ys.push(st.Y[h.sat]); }
  }
  // the crop: the bounding box plus a margin, at the minis' aspect ratio; the whole map
  // when the trail wraps around the date line
  let x0 = Math.min(...xs);
  let x1 = Math.max(...xs);
  let y0 = Math.min(...ys);
  let y1 = Math.max(...ys);
  if (x1 - x0 > st.W / 2) { x0 = 0; x1 = st.W; y0 = 0; y1 = st.H; }
  const pad = 0.08 * st.W;
  let w = Math.max(x1 - x0 + 2 * pad, (y1 - y0 + 2 * pad) * (MINI_W / MINI_H), st.W / 8);
  w = Math.min(w, st.W);
  const h = w * (MINI_H / MINI_W);
  const ox = Math.max(0, Math.min(st.W - w, (x0 + x1) / 2 - w / 2));
  // taller than the map (a wide crop): centred, letterboxed
  const oy = h > st.H ? (st.H - h) / 2 : Math.max(0, Math.min(st.H - h, (y0 + y1) / 2 - h / 2));
  const sc = MINI_W / w;
  const bg = $('bgmap');
  const tx = (x) => (x - ox) * sc;
  const ty = (y) => (y - oy) * sc;
  box.querySelectorAll('canvas.mini').forEach((c, s) => {
    const g = c.getContext('2d');
    g.fillStyle = '#07101c';
    g.fillRect(0, 0, MINI_W, MINI_H);
    const sy0 = Math.max(0, oy);
    const sy1 = Math.min(st.H, oy + h);
    g.drawImage(bg, ox * st.dpr, sy0 * st.dpr, w * st.dpr, (sy1 - sy0) * st.dpr,
      0, ty(sy0), MINI_W, (sy1 - sy0) * sc);
    const info = infos[s];
    const uniq = [...new Set(info.trail)];
    g.setLineDash([3, 2]);
    g.strokeStyle = 'rgba(255,90,200,0.9)';
    g.lineWidth = 1;
    g.beginPath();
    uniq.forEach((sat, i) => {
      const x = tx(st.X[sat]);
      const y = ty(st.Y[sat]);
      if (i && Math.abs(st.X[sat] - st.X[uniq[i - 1]]) < st.W / 2) g.lineTo(x, y); else g.moveTo(x, y);
    });
    g.stroke();
    g.setLineDash([]);
    for (const hd of info.holders) {
      const x = hd.sat === GROUND ? tx(cx) : tx(st.X[hd.sat]);
      const y = hd.sat === GROUND ? ty(cy) + 10 : ty(st.Y[hd.sat]);
      g.beginPath();
      g.arc(x, y, 2 + 1.6 * Math.sqrt(hd.pages / 10), 0, 2 * Math.PI);
      g.fillStyle = 'rgba(255,90,200,0.45)';
      g.fill();
      g.strokeStyle = '#ff5ac8';
      g.stroke();
    }
    if (info.serving >= 0) {
      g.beginPath();
      g.moveTo(tx(cx), ty(cy));
      g.lineTo(tx(st.X[info.serving]), ty(st.Y[info.serving]));
      g.strokeStyle = '#7fffd4';
      g.stroke();
    }
    g.beginPath();
    g.arc(tx(cx), ty(cy), 3, 0, 2 * Math.PI);
    g.fillStyle = '#7fffd4';
    g.fill();
  });
}

// -- controls ------------------------------------------------------------------------
function setFrame(f) {
  const n = st.v.a.frame_t_s.length;
  st.frame = Math.max(0, Math.min(n - 1, f | 0));
  $('slider').value = String(st.frame);
  draw();
}

function setStrategy(s) {
  st.strategy = s;
  $('strategy').value = String(s);
  draw();
}

function selectSession(k) {
  st.session = k;
  $('sessions').value = String(k);
  if (k >= 0) {
    // jump into the session when the slider is outside it
    const a = st.v.a;
    const tS = a.frame_t_s[st.frame];
    if (tS < a.sess_t_s[2 * k] || tS > a.sess_t_s[2 * k + 1]) {
      const mid = (a.sess_t_s[2 * k] + a.sess_t_s[2 * k + 1]) / 2;
      let best = 0;
      for (let f = 0; f < a.frame_t_s.length; f++) if (Math.abs(a.frame_t_s[f] - mid) < Math.abs(a.frame_t_s[best] - mid)) best = f;
      setFrame(best);
      return;
    }
  }
  draw();
}

function play(on) {
  if (on) follow(false);
  st.playing = on;
  $('play').textContent = on ? '❚❚ pause' : '▶ play';
  clearInterval(st.timer);
  if (on) {
    st.timer = setInterval(() => {
      const n = st.v.a.frame_t_s.length;
      setFrame((st.frame + 1) % n);
    }, 120);
  }
}

function setup(v) {
  st.v = v;
  const m = v.meta;
  $('title').textContent = `satpage view — ${m.scenario} (seed ${m.seed}, ${m.satellites.toLocaleString()} satellites, `
    + `${(m.sessions ?? 0).toLocaleString()} sessions, ${m.sampled_sessions} sampled)`;
  $('subtitle').textContent = `${m.constellation} · epoch ${m.epoch} · version ${m.version} · ${m.source}`;
  const slider = $('slider');
  slider.max = String(v.a.frame_t_s.length - 1);
  slider.addEventListener('input', () => { follow(false); setFrame(Number(slider.value)); });
  const sel = $('strategy');
  sel.innerHTML = m.strategies.map((n, i) => `<option value="${i}">${n}</option>`).join('');
  sel.addEventListener('change', () => setStrategy(Number(sel.value)));
  const sessions = $('sessions');
  const a = v.a;
  const K = v.shape.sess_index[0];
  let opts = '<option value="-1">(none)</option>';
  for (let k = 0; k < K; k++) {
    opts += `<option value="${k}">#${a.sess_index[k]} ${hms(a.sess_t_s[2 * k])}, ${a.sess_visit_offsets[k + 1] - a.sess_visit_offsets[k]} sat.</option>`;
  }
  sessions.innerHTML = opts;
  sessions.addEventListener('change', () => selectSession(Number(sessions.value)));
  $('play').addEventListener('click', () => play(!st.playing));
  for (const key of Object.keys(st.show)) {
    const cb = $(`show-${key}`);
    cb.checked = st.show[key];
    cb.addEventListener('change', () => { st.show[key] = cb.checked; draw(); });
  }
  const canvas = $('map');
  const tip = $('tip');
  canvas.addEventListener('mousemove', (ev) => {
    const r = canvas.getBoundingClientRect();
    const h = pick(ev.clientX - r.left, ev.clientY - r.top);
    st.hover = h;
    if (h) {
      tip.innerHTML = describe(h);
      tip.style.display = 'block';
      tip.style.left = `${ev.clientX + 14}px`;
      tip.style.top = `${ev.clientY + 10}px`;
    } else tip.style.display = 'none';
    draw();
  });
  canvas.addEventListener('mouseleave', () => { st.hover = null; tip.style.display = 'none'; draw(); });
  canvas.addEventListener('click', (ev) => {
    const r = canvas.getBoundingClientRect();
    const h = pick(ev.clientX - r.left, ev.clientY - r.top);
    if (h && h.kind === 'session') selectSession(h.id);
    else if (h) $('pinned').innerHTML = describe(h);
  });
  window.addEventListener('keydown', (ev) => {
    if (ev.target.tagName === 'SELECT') return;
    if (ev.key === ' ') { play(!st.playing); ev.preventDefault(); }
  });
  window.addEventListener('resize', resize);
  const metric = $('linkmetric');
  if (a.link_capacity_bytes_per_s) {
    // utilisation by default when some link is noticeably busy, else the page load
    let umax = 0;
    const bg = a.link_background_util;
    if (bg) for (let i = 0; i < bg.length; i++) if (bg[i] > umax) umax = bg[i];
    st.linkMetric = umax >= 0.01 ? 'util' : 'load';
  } else {
    metric.querySelector('option[value="util"]').disabled = true;
    st.linkMetric = 'load';
  }
  metric.value = st.linkMetric;
  metric.addEventListener('change', () => { st.linkMetric = metric.value; legendText(); draw(); });
  legendText();
  resize();
  if (m.clock) {
    // a live cluster: the slider follows its constellation clock until moved by hand
    const box = $('follow');
    box.parentElement.style.display = '';
    box.addEventListener('change', () => follow(box.checked));
    follow(true);
  }
}

function clockFrame() {
  const c = st.v.meta.clock;
  const t = c.now_ns / 1e9 + c.speed * (Date.now() / 1000 - c.wall_unix_s);
  const f = st.v.a.frame_t_s;
  let lo = 0;
  let hi = f.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (f[mid] <= t) lo = mid; else hi = mid - 1;
  }
  return { frame: lo, past: t > f[f.length - 1], t };
}

function follow(on) {
  if (!st.v || !st.v.meta.clock) return;
  st.following = on;
  $('follow').checked = on;
  clearInterval(st.clockTimer);
  if (!on) return;
  const tick = () => {
    const c = clockFrame();
    if (c.frame !== st.frame) setFrame(c.frame);
    $('subtitle').textContent = `live: following the cluster clock at ${st.v.meta.clock.speed}x, `
      + `t = ${hms(c.t)}${c.past ? ' — past this view\'s horizon: run `satpage live view` again' : ''}`;
  };
  tick();
  st.clockTimer = setInterval(tick, 250);
}

function legendText() {
  const m = st.v.meta;
  const legend = LOAD_COLOURS.map((c) => `<span class="sw" style="background:${c}"></span>`).join('');
  $('legend').innerHTML = `ISLs by ${st.linkMetric === 'util' ? 'utilisation 0–100 % (background + session pages)' : 'session pages per window (log scale)'}: ${legend}`
    + ' · <span class="sw" style="background:#39d0ff"></span>satellite holding pages'
    + ' · <span class="sw" style="background:#ff5050"></span>active client'
    + ' · <span class="sw" style="border:1px solid #7fffd4"></span>sampled session (click)'
    + ` · population: ${m.population.source}`;
}

// Test and automation hooks (tests/test_view_browser.py).
Object.assign(hook, {
  setFrame: (f) => setFrame(f),
  selectSession: (k) => selectSession(k),
  setStrategy: (s) => setStrategy(s),
  linkValue: (s, w, l) => linkValue(s, w, l),
  // bench/bench_view.py's baseline: footprints as ellipse paths, 1.6 px links, one path of rects
  setNaive: (on) => { st.naive = Boolean(on); draw(); },
  window: () => windowOf(st.v.a.frame_t_s[st.frame]),
  play: (on) => play(on),
  follow: (on) => follow(on),
  following: () => Boolean(st.following),
  satLatLon: (i) => satLatLon(st.frame, i),
  satPixel: (i) => [st.X[i], st.Y[i]],
  session: (k, s) => sessionInfo(k, s ?? st.strategy, st.frame),
  nFrames: () => st.v.a.frame_t_s.length,
  meta: () => st.v.meta,
});

loadView().then((v) => { setup(v); hook.ready = true; }).catch((err) => {
  hook.error = String(err && err.stack ? err.stack : err);
  $('title').textContent = `satpage view: ${err}`;
  console.error(err);
});
