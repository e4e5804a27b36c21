"""The judges' page: one static HTML document with its script (no policy name can be in it).

The clips are shown at the resolution they were recorded at; the zoom (buttons, or keys 1-3)
scales both alike. Keys (outside the reason field): ``a`` A is better, ``t`` tie, ``b`` B is
better, ``s`` skip, ``u`` undo, ``p`` play both, ``1``/``2``/``3`` zoom. A choice key with no
reason yet puts the cursor in the reason field; Enter there sends that choice (Shift+Enter: a
new line), Escape leaves the field. "Sign out" hands the page to another judge.
"""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>realm_ros arena: which rollout is better?</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.2em auto;max-width:1180px;color:#222;padding:0 1em}
h1{font-size:1.3em;margin:0 0 .3em}
#who{float:right;font-size:.9em;color:#555}
#who button{font-size:.85em;padding:.2em .6em;margin-left:.5em}
#task{background:#f4f6f8;border-radius:6px;padding:.6em .9em;margin:.6em 0}
#instruction{font-size:1.15em;font-weight:600}
#again{display:none;color:#7d5a00;font-weight:600}
.pair{display:flex;gap:14px;justify-content:center;overflow-x:auto}
.side{text-align:center}
.side h2{margin:.2em 0;font-size:1.1em}
video{background:#000;border-radius:4px;display:block;margin:0 auto;image-rendering:pixelated}
.buttons{display:flex;gap:10px;justify-content:center;align-items:center;margin:.8em 0;
  flex-wrap:wrap}
button{font-size:1em;padding:.5em 1.1em;border-radius:5px;border:1px solid #888;
  background:#fff;cursor:pointer}
button.on{background:#e8eef5;font-weight:600}
button.pick{font-weight:600;min-width:9em}
button.pick.A{border-color:#2471a3;color:#2471a3}button.pick.B{border-color:#c0392b;color:#c0392b}
kbd{font-size:.8em;border:1px solid #aaa;border-radius:3px;padding:0 .3em;color:#555}
textarea{width:100%;box-sizing:border-box;font:inherit;min-height:3.2em}
#message{min-height:1.3em;color:#b03a2e;font-weight:600;text-align:center}
#progress,#keys{color:#555;font-size:.9em;text-align:center}
#login,#done{display:none;text-align:center;margin-top:3em}
</style></head>
<body>
<div id="who"><span id="judgename"></span>
  <button id="signout" style="display:none">Sign out</button></div>
<h1>Which rollout is better?</h1>
<div id="login"><p>Your name (it is stored with your answers):</p>
  <input id="name" maxlength="64" autofocus> <button id="start">Start judging</button></div>
<div id="done"><p id="donetext">You have judged every pair. Thank you.</p></div>
<div id="judging" style="display:none">
  <div id="task"><div>Instruction given to the robot:
    <span id="instruction"></span></div>
    <div><small>task <span id="taskname"></span> · perturbation <span id="perturbation"></span>
    · world <span id="world"></span> · same start, same instruction, two policies, sides at
    random</small></div>
    <div id="again">You skipped this pair before: it is offered again.</div></div>
  <div class="pair">
    <div class="side"><h2>A</h2><video id="videoA" muted playsinline controls preload="auto">
      </video></div>
    <div class="side"><h2>B</h2><video id="videoB" muted playsinline controls preload="auto">
      </video></div>
  </div>
  <div class="buttons"><button id="play">&#9654; Play both <kbd>p</kbd></button>
    <span>zoom</span><button class="zoom" id="zoom1">1&times; <kbd>1</kbd></button>
    <button class="zoom" id="zoom2">2&times; <kbd>2</kbd></button>
    <button class="zoom" id="zoom3">3&times; <kbd>3</kbd></button></div>
  <label for="reason">Why? (required: what did the better robot do, or why is it a tie)</label>
  <textarea id="reason" maxlength="2000"></textarea>
  <div class="buttons">
    <button class="pick A" id="chooseA">A is better <kbd>a</kbd></button>
    <button class="pick" id="chooseTie">Tie <kbd>t</kbd></button>
    <button class="pick B" id="chooseB">B is better <kbd>b</kbd></button>
  </div>
  <div class="buttons"><button id="skip">Skip this pair <kbd>s</kbd></button>
    <button id="undo">Undo my last answer <kbd>u</kbd></button></div>
  <div id="message"></div>
  <div id="progress"></div>
  <div id="keys">Keys work outside the reason field. A choice key with no reason yet moves
    to the field; Enter there sends that choice, Esc leaves the field.</div>
</div>
<script>
'use strict';
let judge = localStorage.getItem('arena-judge') || '';
let current = null;
let pending = null;  // a choice asked for by key before a reason was written
let zoom = Number(localStorage.getItem('arena-zoom')) || 1;
const $ = (id) => document.getElementById(id);
const NAMES = {A: 'A is better', B: 'B is better', tie: 'a tie'};

function say(text) { $('message').textContent = text || ''; }

async function call(path, body) {
  const options = body === undefined ? {} : {method: 'POST', body: JSON.stringify(body),
    headers: {'Content-Type': 'application/json'}};
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) {
    throw new Error(typeof data.detail === 'string' ? data.detail :
                    'The server refused this (' + response.status + ').');
  }
  return data;
}

function showProgress(p) {
  const skipped = p.skipped ? ` (${p.skipped} skipped, offered again at the end)` : '';
  $('progress').textContent = `You have answered ${p.answered} of ${p.total} pairs` +
    `${skipped}; ${p.all_judges} judgments from all judges so far.`;
}

function applyZoom() {
  // Recorded resolution times the zoom, both clips alike.
  for (const id of ['videoA', 'videoB']) {
    const v = $(id);
    if (v.videoWidth) { v.style.width = (v.videoWidth * zoom) + 'px'; }
  }
  for (const k of [1, 2, 3]) { $('zoom' + k).classList.toggle('on', k === zoom); }
}

function setZoom(k) { zoom = k; localStorage.setItem('arena-zoom', String(k)); applyZoom(); }

function showLogin() {
  current = null; pending = null;
  for (const id of ['judging', 'done', 'signout']) { $(id).style.display = 'none'; }
  $('judgename').textContent = '';
  $('name').value = ''; $('login').style.display = 'block'; $('name').focus();
}

async function next() {
  const data = await call('/api/next?judge=' + encodeURIComponent(judge));
  $('judgename').textContent = 'judge: ' + judge;
  $('signout').style.display = 'inline';
  pending = null;
  if (data.done) {
    $('judging').style.display = 'none'; $('done').style.display = 'block';
    $('donetext').textContent = 'You have judged every pair' + (data.progress.skipped ?
      ` you could (${data.progress.skipped} skipped twice, left out)` : '') + '. Thank you.';
    current = null; return;
  }
  current = data;
  $('done').style.display = 'none'; $('judging').style.display = 'block';
  $('instruction').textContent = data.instruction;
  $('taskname').textContent = data.task;
  $('perturbation').textContent = data.perturbation;
  $('world').textContent = data.world;
  $('again').style.display = data.skipped_before ? 'block' : 'none';
  $('videoA').src = data.left; $('videoB').src = data.right;
  $('reason').value = '';
  showProgress(data.progress);
}

async function act(path, body, after) {
  if (!current && path !== '/api/undo') return;
  try { const data = await call(path, body); say(after ? after(data) : ''); await next(); }
  catch (err) { say(err.message); }
}

function answer(choice) {
  if (!current) return;
  return act('/api/judge', {token: current.token, judge: judge, choice: choice,
                            reason: $('reason').value});
}
const skip = () => current && act('/api/skip', {token: current.token, judge: judge});
const undo = () => act('/api/undo', {judge: judge}, (data) => data.undone ?
  'Your last answer was undone: judge this pair again.' : 'Nothing to undo.');
const play = () => {
  for (const id of ['videoA', 'videoB']) { const v = $(id); v.currentTime = 0; v.play(); }
};

$('chooseA').onclick = () => answer('A');
$('chooseB').onclick = () => answer('B');
$('chooseTie').onclick = () => answer('tie');
$('skip').onclick = skip;
$('undo').onclick = undo;
$('play').onclick = play;
for (const k of [1, 2, 3]) { $('zoom' + k).onclick = () => setZoom(k); }
for (const id of ['videoA', 'videoB']) { $(id).addEventListener('loadedmetadata', applyZoom); }
$('signout').onclick = () => {
  localStorage.removeItem('arena-judge'); judge = '';
  for (const id of ['videoA', 'videoB']) { $(id).pause(); $(id).removeAttribute('src'); }
  say(''); showLogin();
};

function byKey(choice) {
  if ($('reason').value.trim()) { answer(choice); return; }
  pending = choice; $('reason').focus();
  say(`Why ${NAMES[choice]}? Write the reason, then press Enter.`);
}

document.addEventListener('keydown', (event) => {
  if (event.ctrlKey || event.metaKey || event.altKey || !judge) return;
  const target = event.target;
  if (target === $('reason')) {
    if (event.key === 'Escape') { target.blur(); event.preventDefault(); }
    else if (event.key === 'Enter' && !event.shiftKey && pending) {
      event.preventDefault(); const choice = pending; pending = null; answer(choice);
    }
    return;
  }
  if (target.tagName === 'INPUT' || target.tagName === 'TEXTAREA') {
    if (target === $('name') && event.key === 'Enter') { $('start').click(); }
    return;
  }
  if (!current && event.key !== 'u') return;
  const actions = {a: () => byKey('A'), t: () => byKey('tie'), b: () => byKey('B'), s: skip,
                   u: undo, p: play, 1: () => setZoom(1), 2: () => setZoom(2),
                   3: () => setZoom(3)};
  const action = actions[event.key.toLowerCase()];
  if (action) { event.preventDefault(); action(); }
});

$('start').onclick = () => {
  const name = $('name').value.trim();
  if (!name) { say('Write your name first.'); return; }
  judge = name; localStorage.setItem('arena-judge', judge);
  say(''); $('login').style.display = 'none'; next().catch((err) => say(err.message));
};
applyZoom();
if (judge) { next().catch((err) => say(err.message)); }
else { showLogin(); }
</script>
</body></html>
"""
