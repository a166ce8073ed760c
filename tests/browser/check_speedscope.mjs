// Loads a speedscope JSON file written by `lookback convert --to speedscope`
// into the real speedscope UI (the npm package's built web app) in headless
// Chromium, and fails unless it imports without errors, draws a flame chart,
// and lists the expected functions.
//
//   node check_speedscope.mjs PROFILE.json OUT_DIR --expect outer,middle,thrower
//
// Writes OUT_DIR/speedscope-time-order.png, OUT_DIR/speedscope-sandwich.png
// (speedscope-failed.png when the import fails) and the page's console.log.
// Uses the system Chromium (/usr/bin/chromium, or $CHROMIUM); playwright-core
// never downloads a browser of its own.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';

const require = createRequire(import.meta.url);
const TIMEOUT_MS = 60_000;

function usage(msg) {
  console.error(`check_speedscope: ${msg}\nusage: node check_speedscope.mjs PROFILE.json OUT_DIR [--expect a,b,c]`);
  process.exit(2);
}

const args = process.argv.slice(2);
let expect = [];
const positional = [];
for (let i = 0; i < args.length; ++i) {
  if (args[i] === '--expect') expect = (args[++i] ?? '').split(',').filter(Boolean);
  else positional.push(args[i]);
}
if (positional.length !== 2) usage('need PROFILE.json and OUT_DIR');
const [profilePath, outDir] = positional;
fs.mkdirSync(outDir, { recursive: true });

// What the page must show, from the file itself: the group name as the page
// title and the first profile's (thread's) name in the toolbar.
const profileBytes = fs.readFileSync(profilePath);
const profile = JSON.parse(profileBytes.toString('utf8'));
const groupName = profile.name;
const activeName = profile.profiles[profile.activeProfileIndex ?? 0]?.name;
if (!groupName || !activeName) usage(`${profilePath}: no name or no profiles`);

// speedscope's built app: dist/release/index.html beside the package.json.
const appDir = path.join(path.dirname(require.resolve('speedscope/package.json')), 'dist', 'release');
const types = {
  '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.json': 'application/json',
  '.png': 'image/png', '.ico': 'image/x-icon', '.woff2': 'font/woff2', '.wasm': 'application/wasm',
  '.txt': 'text/plain',
};
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (url.pathname === '/profile.json') {
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(profileBytes);
    return;
  }
  const rel = path.normalize(decodeURIComponent(url.pathname === '/' ? '/index.html' : url.pathname));
  const file = path.join(appDir, rel);
  if (!file.startsWith(appDir + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
    res.writeHead(404);
    res.end('not found');
    return;
  }
  res.writeHead(200, { 'Content-Type': types[path.extname(file)] ?? 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${server.address().port}`;

const problems = [];
const consoleLines = [];
const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lookback-chromium-'));
let context;
try {
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1400, height: 800 },
    timeout: TIMEOUT_MS,
    args: [
      '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run',
      // speedscope draws with WebGL; without a GPU that is SwiftShader.
      '--use-angle=swiftshader', '--enable-unsafe-swiftshader',
    ],
  });
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(TIMEOUT_MS);
  // speedscope reports a failed import with console.log("Failed to load
  // format", error), a broken file with alert(): both count, as do errors.
  page.on('console', (m) => {
    consoleLines.push(`[${m.type()}] ${m.text()}`);
    if (m.type() === 'error' || /Failed to load|Tried to (leave|complete)|Unrecognized format/.test(m.text())) {
      problems.push(`console ${m.type()}: ${m.text()}`);
    }
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('requestfailed', (r) => problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`));
  page.on('dialog', async (d) => {
    problems.push(`dialog: ${d.message()}`);
    await d.dismiss();
  });

  const profileURL = encodeURIComponent(`${base}/profile.json`);
  await page.goto(`${base}/index.html#profileURL=${profileURL}`);

  // Imported: speedscope names the page after the profile group; a failed
  // import shows "Something went wrong" instead. Either ends the wait.
  await page
    .waitForFunction(
      (t) => document.title === t || document.body.innerText.includes('Something went wrong'),
      `${groupName} - speedscope`,
    )
    .catch(() => {});
  const title = await page.title();
  if (title !== `${groupName} - speedscope`) problems.push(`title is ${JSON.stringify(title)}`);
  if (await page.getByText('Something went wrong').count()) problems.push('speedscope says "Something went wrong"');
  if (problems.length) {
    await page.screenshot({ path: path.join(outDir, 'speedscope-failed.png') });
    throw new Error(`import failed; see ${path.join(outDir, 'speedscope-failed.png')}`);
  }
  if (await page.getByText(activeName, { exact: false }).count() === 0) {
    problems.push(`toolbar does not name the thread ${JSON.stringify(activeName)}`);
  }

  // The flame chart is drawn on a WebGL canvas: wait until the screenshot has
  // enough coloured (not grey) pixels, i.e. frames were drawn. speedscope's
  // frame colours are pastel; the grey UI and white background have none.
  let colored = 0;
  const deadline = Date.now() + TIMEOUT_MS;
  const timeOrderPng = path.join(outDir, 'speedscope-time-order.png');
  while (Date.now() < deadline) {
    const png = await page.screenshot({ path: timeOrderPng });
    colored = await page.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const c = document.createElement('canvas');
      c.width = img.width;
      c.height = img.height;
      const g = c.getContext('2d');
      g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 15) ++n;
      }
      return n / (d.length / 4);
    }, png.toString('base64'));
    if (colored > 0.01) break;
    await page.waitForTimeout(250);
  }
  if (colored <= 0.01) problems.push(`no flame chart drawn (${(colored * 100).toFixed(2)}% coloured pixels)`);

  // Function names: the Sandwich view lists them in an HTML table.
  await page.getByText(/Sandwich/).first().click({ timeout: 10_000 });
  const sandwichPng = path.join(outDir, 'speedscope-sandwich.png');
  for (const name of expect) {
    const cell = page.getByText(name, { exact: false }).first();
    try {
      await cell.waitFor({ state: 'visible', timeout: 10_000 });
    } catch {
      problems.push(`function ${JSON.stringify(name)} not listed in the Sandwich view`);
    }
  }
  await page.screenshot({ path: sandwichPng });
  console.log(`check_speedscope: title ${JSON.stringify(title)}, ${(colored * 100).toFixed(1)}% coloured pixels`);
  console.log(`check_speedscope: screenshots ${timeOrderPng} ${sandwichPng}`);
} catch (e) {
  problems.push(`${e.name}: ${e.message}`);
} finally {
  fs.writeFileSync(path.join(outDir, 'console.log'), consoleLines.join('\n') + '\n');
  await context?.close().catch(() => {});
  server.close();
  fs.rmSync(userDataDir, { recursive: true, force: true });
}

if (problems.length) {
  for (const p of problems) console.error(`check_speedscope: FAIL: ${p}`);
  process.exit(1);
}
console.log(`check_speedscope: OK: ${profilePath} loads in speedscope; found ${expect.join(', ') || 'no names asked'}`);
