// trace_html.mjs: opens self-contained HTML reports (trace --html, cluster --html) in
// Debian's headless Chromium via playwright-core and checks what a reader sees.
// Usage: node trace_html.mjs ARTIFACT_DIR PROFILE_DIR FILE=ID,ID,... [FILE=...]
// For each FILE: no console or page error, no request other than the file itself (the page
// must work offline), each section ID present with at least one SVG after its heading that
// draws something (a rect or path of non-zero size); an ID written "+ID" is a text section
// (the findings): it needs at least one finding box with evidence and a fix; when the
// page has a timeline,
// that zooming narrows its viewBox. Saves a full-page screenshot NAME.png.
import { openPage, fail } from './chromium_lib.mjs';
import path from 'path';

const [artifacts, profile, ...specs] = process.argv.slice(2);
const { ctx, page, errors } = await openPage(profile);
const requests = [];
page.on('request', (r) => requests.push(r.url()));
try {
  for (const spec of specs) {
    const [file, ids] = spec.split('=');
    const url = 'file://' + path.resolve(file);
    requests.length = 0;
    await page.goto(url, { waitUntil: 'load' });
    const foreign = requests.filter((u) => u !== url && !u.startsWith('data:'));
    if (foreign.length) fail(`${file}: requests beyond the page: ${foreign.join(' ')}`);
    for (let id of ids.split(',')) {
      const text = id.startsWith('+');
      if (text) id = id.slice(1);
      const r = await page.evaluate(([id, text]) => {
        const h = document.getElementById(id);
        if (!h) return { err: 'missing' };
        if (text) {
          let boxes = 0;
          for (let e = h.nextElementSibling; e && !/^H[12]$/.test(e.tagName); e = e.nextElementSibling)
            if (e.classList.contains('finding') && e.querySelector('li.ev') && e.querySelector('.fix'))
              boxes++;
          return { svgs: boxes, marks: boxes };
        }
        let marks = 0, svgs = 0;
        for (let e = h.nextElementSibling; e && !/^H[12]$/.test(e.tagName); e = e.nextElementSibling) {
          const list = e.tagName === 'svg' ? [e] : [...e.querySelectorAll('svg')];
          for (const s of list) {
            svgs++;
            for (const m of s.querySelectorAll('rect,path')) {
              const b = m.getBBox();
              if (b.width > 0 && (b.height > 0 || m.tagName === 'path')) marks++;
            }
          }
        }
        return { svgs, marks };
      }, [id, text]);
      if (r.err) fail(`${file}: section #${id} ${r.err}`);
      if (!r.svgs || !r.marks) fail(`${file}: section #${id} has no drawn SVG (${r.svgs} svg, ${r.marks} marks)`);
      console.log(`${path.basename(file)} #${id}: ${r.svgs} svg, ${r.marks} marks`);
    }
    if (await page.$('.tl')) {
      const before = await page.$eval('.tlsvg', (s) => s.viewBox.baseVal.width);
      await page.click('.tl button[data-z="in"]');
      const after = await page.$eval('.tlsvg', (s) => s.viewBox.baseVal.width);
      if (!(after > 0 && Math.abs(after - before / 2) < before * 1e-6))
        fail(`${file}: zoom in did not halve the timeline window (${before} -> ${after})`);
      await page.locator('.tl').first().screenshot({ path: path.join(artifacts, path.basename(file) + '.timeline-zoom2.png') });
      await page.click('.tl button[data-z="reset"]');
    }
    await page.screenshot({ path: path.join(artifacts, path.basename(file) + '.png'), fullPage: true });
    // a page wider than the window hides the end of a table or chart behind a scroll bar
    const wide = await page.evaluate(() => {
      const W = window.innerWidth;
      if (document.documentElement.scrollWidth <= W + 1) return '';
      const e = [...document.querySelectorAll('body *')].find((e) => e.getBoundingClientRect().right > W + 1);
      return e.tagName + '.' + e.className + ' ' + e.outerHTML.slice(0, 120);
    });
    if (wide) fail(`${file}: page is wider than the ${1366} px window: ${wide}`);
    if (errors.length) fail(`${file}: ${errors.join('; ')}`);
  }
} finally {
  await ctx.close();
}
