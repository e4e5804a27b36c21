"""The judges' page: one static HTML document with its script (no policy name can be in it)."""

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>realm_ros arena: which rollout is better?</title>
<style>
body{font-family:system-ui,sans-serif;margin:1.2em auto;max-width:1180px;color:#222;padding:0 1em}
h1{font-size:1.3em;margin:0 0 .3em}
#who{float:right;font-size:.9em;color:#555}
#task{background:#f4f6f8;border-radius:6px;padding:.6em .9em;margin:.6em 0}
#instruction{font-size:1.15em;font-weight:600}
.pair{display:flex;gap:14px}
.side{flex:1;text-align:center}
.side h2{margin:.2em 0;font-size:1.1em}
video{width:100%;background:#000;border-radius:4px;aspect-ratio:16/9}
.buttons{display:flex;gap:10px;justify-content:center;margin:.8em 0}
button{font-size:1em;padding:.5em 1.1em;border-radius:5px;border:1px solid #888;
  background:#fff;cursor:pointer}
button.pick{font-weight:600;min-width:9em}
button.pick.A{border-color:#2471a3;color:#2471a3}button.pick.B{border-color:#c0392b;color:#c0392b}
textarea{width:100%;box-sizing:border-box;font:inherit;min-height:3.2em}
#message{min-height:1.3em;color:#b03a2e;font-weight:600;text-align:center}
#progress{color:#555;font-size:.9em;text-align:center}
#login,#done{display:none;text-align:center;margin-top:3em}
</style></head>
<body>
<div id="who"></div>
<h1>Which rollout is better?</h1>
<div id="login"><p>Your name (it is stored with your answers):</p>
  <input id="name" maxlength="64" autofocus> <button id="start">Start judging</button></div>
<div id="done"><p>You have judged every pair. Thank you.</p></div>
<div id="judging" style="display:none">
  <div id="task"><div>Instruction given to the robot:
    <span id="instruction"></span></div>
    <div><small>task <span id="taskname"></span> · perturbation <span id="perturbation"></span>
    · <span id="world"></span> · same start, same instruction, two policies, sides at
    random</small></div></div>
  <div class="pair">
    <div class="side"><h2>A</h2><video id="videoA" muted playsinline controls preload="auto">
      </video></div>
    <div class="side"><h2>B</h2><video id="videoB" muted playsinline controls preload="auto">
      </video></div>
  </div>
  <div class="buttons"><button id="play">&#9654; Play both</button></div>
  <label for="reason">Why? (required: what did the better robot do, or why is it a tie)</label>
  <textarea id="reason" maxlength="2000"></textarea>
  <div class="buttons">
    <button class="pick A" id="chooseA">A is better</button>
    <button class="pick" id="chooseTie">Tie</button>
    <button class="pick B" id="chooseB">B is better</button>
  </div>
  <div class="buttons"><button id="skip">Skip this pair</button>
    <button id="undo">Undo my last answer</button></div>
  <div id="message"></div>
  <div id="progress"></div>
</div>
<script>
'use strict';
let judge = localStorage.getItem('arena-judge') || '';
let current = null;
const $ = (id) => document.getElementById(id);

function say(text) { $('message').textContent = text || ''; }

async function call(path, body) {
  const options = body === undefined ? {} : {method: 'POST', body: JSON.stringify(body),
    headers: {'Content-Type': 'application/json'}};
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({}));
  if (!response.ok) { throw new Error(data.detail || response.statusText); }
  return data;
}

function showProgress(p) {
  $('progress').textContent = `You have answered ${p.answered} of ${p.total} pairs; ` +
    `${p.all_judges} judgments from all judges so far.`;
}

async function next() {
  const data = await call('/api/next?judge=' + encodeURIComponent(judge));
  $('who').textContent = 'judge: ' + judge;
  if (data.done) {
    $('judging').style.display = 'none'; $('done').style.display = 'block';
    current = null; return;
  }
  current = data;
  $('done').style.display = 'none'; $('judging').style.display = 'block';
  $('instruction').textContent = data.instruction;
  $('taskname').textContent = data.task;
  $('perturbation').textContent = data.perturbation;
  $('world').textContent = data.world;
  $('videoA').src = data.left; $('videoB').src = data.right;
  $('reason').value = '';
  showProgress(data.progress);
}

async function answer(choice) {
  if (!current) return;
  try {
    await call('/api/judge', {token: current.token, judge: judge, choice: choice,
                              reason: $('reason').value});
    say(''); await next();
  } catch (err) { say(err.message); }
}

$('chooseA').onclick = () => answer('A');
$('chooseB').onclick = () => answer('B');
$('chooseTie').onclick = () => answer('tie');
$('skip').onclick = async () => {
  try { await call('/api/skip', {token: current.token, judge: judge}); say(''); await next(); }
  catch (err) { say(err.message); }
};
$('undo').onclick = async () => {
  try {
    const data = await call('/api/undo', {judge: judge});
    say(data.undone ? 'Your last answer was undone: judge this pair again.' :
        'Nothing to undo.');
    await next();
  } catch (err) { say(err.message); }
};
$('play').onclick = () => {
  for (const id of ['videoA', 'videoB']) { const v = $(id); v.currentTime = 0; v.play(); }
};
$('start').onclick = () => {
  const name = $('name').value.trim();
  if (!name) { return; }
  judge = name; localStorage.setItem('arena-judge', judge);
  $('login').style.display = 'none'; next().catch((err) => say(err.message));
};
if (judge) { next().catch((err) => say(err.message)); }
else { $('login').style.display = 'block'; }
</script>
</body></html>
"""
