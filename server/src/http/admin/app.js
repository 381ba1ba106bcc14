// The operator's console: every value is rendered with textContent, never as HTML.
'use strict';

const $ = (id) => document.getElementById(id);
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const TOKEN_KEY = 'mcp-tasks-admin-token';
// New tasks and changes are pushed on the event stream; the first page is also read again
// this seldom while it is shown, in case an event went unheard (a store whose feed may
// lose one).
const FALLBACK_MS = 60000;

const state = {
  token: sessionStorage.getItem(TOKEN_KEY),
  cursors: [null], // the cursor of each page seen, page 1 first
  next: null,
  filters: { status: '', tool: '', owner: '' },
  selected: null,
  stream: null,
  counts: null,
  countsAt: 0,
  timers: {},
  seq: 0,
  detailSeq: 0,
  pending: null, // the action the confirmation dialog asks about
};

// One run of `fn` after `ms` of quiet, however often it is asked for.
function later(name, ms, fn) {
  clearTimeout(state.timers[name]);
  state.timers[name] = setTimeout(fn, ms);
}

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error) || 'HTTP ' + status);
    this.status = status;
    this.body = body;
  }
}

async function api(path, options = {}) {
  const headers = { Authorization: 'Bearer ' + state.token };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { ...options, headers, cache: 'no-store' });
  let body = null;
  try { body = await response.json(); } catch (_) { body = null; }
  if (response.status === 401) {
    signOut('The admin token was refused.');
    throw new ApiError(401, body);
  }
  if (!response.ok) throw new ApiError(response.status, body);
  return body;
}

function setLive(text, on) {
  $('live').textContent = text;
  $('live').classList.toggle('on', !!on);
}

// Signing in and out.
async function signIn(token) {
  state.token = token;
  try {
    await api('/api/counts').then(showCounts);
  } catch (err) {
    state.token = null;
    if (!(err instanceof ApiError && err.status === 401)) {
      $('login-error').textContent = 'The console did not answer: ' + err.message;
    }
    return;
  }
  sessionStorage.setItem(TOKEN_KEY, token);
  $('login').hidden = true;
  $('app').hidden = false;
  $('sign-out').hidden = false;
  $('login-error').textContent = '';
  loadPage();
  refreshInstances();
  startStream();
}

function signOut(why) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = null;
  if (state.stream) state.stream.abort();
  state.stream = null;
  $('app').hidden = true;
  $('sign-out').hidden = true;
  $('login').hidden = false;
  $('token').value = '';
  $('login-error').textContent = why || '';
  setLive('signed out', false);
  $('token').focus();
}

// The counts and the chart.
function tally(node, entries) {
  node.replaceChildren();
  for (const [name, value] of entries) {
    const box = el('div');
    box.dataset.name = name;
    box.append(el('dt', name), el('dd', value));
    node.append(box);
  }
}

function age(ms) {
  const s = Math.floor(ms / 1000);
  if (s < 120) return s + ' s';
  if (s < 7200) return Math.floor(s / 60) + ' min';
  return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
}

function showCounts(counts) {
  state.counts = counts;
  state.countsAt = Date.now();
  $('total').textContent = counts.total;
  $('truncated').hidden = !counts.truncated;
  tally($('by-status'), STATUSES.map((s) => [s, counts.byStatus[s] || 0]));
  tally($('by-tool'), Object.entries(counts.byTool));
  tickOldest();
  drawChart(counts.lastHour);
}

function tickOldest() {
  const counts = state.counts;
  if (!counts || counts.oldestWorkingAgeMs === null || counts.oldestWorkingAgeMs === undefined) {
    $('oldest').textContent = 'none';
    return;
  }
  $('oldest').textContent = age(counts.oldestWorkingAgeMs + (Date.now() - state.countsAt));
}

const SVG = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = String(text);
  return node;
}

function drawChart(hour) {
  const chart = $('chart');
  chart.replaceChildren();
  const series = ['created', 'completed', 'failed', 'cancelled'];
  const W = 600, H = 170, left = 34, right = 8, top = 10, bottom = 22;
  const max = Math.max(1, ...series.flatMap((s) => hour[s]));
  const x = (i) => left + (i / 59) * (W - left - right);
  const y = (v) => H - bottom - (v / max) * (H - top - bottom);
  chart.append(svg('line', { class: 'axis', x1: left, y1: H - bottom, x2: W - right, y2: H - bottom }));
  chart.append(svg('line', { class: 'axis', x1: left, y1: top, x2: left, y2: H - bottom }));
  chart.append(svg('text', { x: 2, y: top + 8 }, max));
  chart.append(svg('text', { x: 2, y: H - bottom }, 0));
  chart.append(svg('text', { x: left, y: H - 6 }, '60 min ago'));
  chart.append(svg('text', { x: W - right - 24, y: H - 6 }, 'now'));
  for (const s of series) {
    const points = hour[s].map((v, i) => x(i).toFixed(1) + ',' + y(v).toFixed(1)).join(' ');
    chart.append(svg('polyline', { class: s, points }));
  }
  const sum = (s) => hour[s].reduce((a, b) => a + b, 0);
  $('chart-summary').textContent = 'Per minute over the last hour: created ' + sum('created') +
    ' (blue), completed ' + sum('completed') + ' (green), failed ' + sum('failed') +
    ' (red), cancelled ' + sum('cancelled') + ' (grey).';
}

function refreshCounts() {
  later('counts', 500, () => api('/api/counts').then(showCounts).catch(() => {}));
  refreshInstances();
}

// The instances, with a drain (or undrain) button each.
function refreshInstances() {
  later('instances', 500, () => api('/api/instances').then(showInstances).catch(() => {}));
}

function showInstances(answer) {
  $('instances').tBodies[0].replaceChildren(...answer.instances.map(instanceRow));
  $('instances-empty').hidden = answer.instances.length > 0;
}

function instanceRow(instance) {
  const tr = el('tr');
  tr.dataset.name = instance.name;
  const shown = instance.draining ? 'draining' : 'claiming';
  const button = el('button', instance.draining ? 'Undrain…' : 'Drain…');
  button.type = 'button';
  button.className = instance.draining ? 'undrain' : 'drain';
  button.setAttribute('aria-label', (instance.draining ? 'Undrain ' : 'Drain ') + instance.name);
  button.addEventListener('click', () => instanceAction(instance));
  const cell = el('td', undefined, 'action');
  cell.append(button);
  tr.append(el('td', instance.name), el('td', instance.tasks), el('td', instance.liveLeases),
    el('td', instance.alive ? 'yes' : 'no'), el('td', shown, 'state ' + shown), cell);
  return tr;
}

function instanceAction(instance) {
  const name = instance.name;
  const drain = !instance.draining;
  ask({
    title: (drain ? 'Drain ' : 'Undrain ') + name + '?',
    text: drain
      ? 'Instance ' + name + ' will claim no task until it is undrained or restarts, and the ' +
        instance.tasks + ' tasks it holds are handed over to the other instances (a task that ' +
        'runs once, or is on its last attempt, stays there to its end).'
      : 'Instance ' + name + ' will claim tasks again.',
    yes: drain ? 'Drain' : 'Undrain',
    no: 'Go back',
  }, async () => {
    const action = drain ? 'drain' : 'undrain';
    try {
      const answer = await api('/api/instances/' + encodeURIComponent(name) + '/' + action, {
        method: 'POST',
        body: '{}',
      });
      $('instance-result').textContent = drain
        ? 'Drained ' + name + ': ' + answer.handedOver.length + ' tasks handed over, ' +
          answer.kept.length + ' kept.'
        : (answer.wasDraining ? 'Undrained ' + name + '.' : name + ' was not drained.');
    } catch (err) {
      $('instance-result').textContent = 'Not done: ' + err.message;
    }
    refreshInstances();
  });
}

// The purge of finished tasks older than a bound.
function purge() {
  const amount = Number($('purge-age').value);
  if ($('purge-age').value === '' || !Number.isInteger(amount) || amount < 0) {
    $('purge-result').textContent = 'Give the age as a whole number, 0 or more.';
    $('purge-age').focus();
    return;
  }
  const unit = $('purge-unit');
  const olderThanMs = amount * Number(unit.value);
  ask({
    title: 'Purge finished tasks?',
    text: 'Remove every completed, failed and cancelled task, of every owner, last updated ' +
      'more than ' + amount + ' ' + unit.selectedOptions[0].textContent + '? This cannot be undone.',
    yes: 'Purge',
    no: 'Keep them',
  }, async () => {
    $('purge-result').textContent = 'Purging…';
    try {
      const answer = await api('/api/purge', {
        method: 'POST',
        body: JSON.stringify({ olderThanMs }),
      });
      $('purge-result').textContent = 'Purged ' + answer.purged + ' of ' + answer.examined +
        ' finished tasks.';
    } catch (err) {
      $('purge-result').textContent = 'Not done: ' + err.message;
    }
    loadPage();
    refreshCounts();
  });
}

// The table.
function query(cursor) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(state.filters)) if (v) params.set(k, v);
  if (cursor) params.set('cursor', cursor);
  params.set('limit', '50');
  return '/api/tasks?' + params.toString();
}

function localTime(text) {
  const d = new Date(text);
  return isNaN(d) ? text : d.toLocaleString();
}

function fillRow(tr, task) {
  tr.dataset.id = task.taskId;
  tr.dataset.status = task.status;
  const cells = tr.children;
  cells[1].textContent = task.owner === null ? '(anonymous)' : task.owner;
  if (task.tool !== undefined) cells[2].textContent = task.tool || '';
  cells[3].textContent = task.status;
  cells[3].className = 'status ' + task.status;
  cells[4].textContent = task.statusMessage || '';
  cells[5].textContent = localTime(task.createdAt);
  if (task.attempt !== undefined) {
    cells[6].textContent = task.attempt ? task.attempt + ' of ' + task.maxAttempts : '';
  }
}

function row(task) {
  const tr = el('tr');
  const open = el('button', task.taskId);
  open.type = 'button';
  open.setAttribute('aria-label', 'Show task ' + task.taskId);
  open.addEventListener('click', () => showTask(task.taskId));
  const first = el('td');
  first.append(open);
  tr.append(first, el('td'), el('td'), el('td'), el('td', '', 'message'), el('td'), el('td'));
  fillRow(tr, task);
  if (task.taskId === state.selected) tr.classList.add('selected');
  return tr;
}

// Reads the current page; an answer overtaken by a later read is dropped. The body's
// data-requested and data-rendered say which read was asked for last and shown.
async function loadPage() {
  const page = state.cursors.length;
  const seq = ++state.seq;
  document.body.dataset.requested = seq;
  let answer;
  try {
    answer = await api(query(state.cursors[page - 1]));
  } catch (err) {
    if (seq === state.seq && err.status !== 401) {
      $('list-error').textContent = err.message;
      document.body.dataset.rendered = seq;
    }
    return;
  }
  if (seq !== state.seq) return;
  $('list-error').textContent = '';
  document.body.dataset.rendered = seq;
  $('tasks').tBodies[0].replaceChildren(...answer.tasks.map(row));
  state.next = answer.nextCursor;
  $('next').disabled = !state.next;
  $('prev').disabled = page <= 1;
  $('page-label').textContent = 'page ' + page + ' (' + answer.tasks.length + ' tasks)';
}

function findRow(id) {
  for (const tr of $('tasks').tBodies[0].rows) if (tr.dataset.id === id) return tr;
  return null;
}

function matches(task) {
  const f = state.filters;
  if (f.status && task.status !== f.status) return false;
  if (f.owner && task.owner !== f.owner) return false;
  return true;
}

// A creation or change the stream told (`task.change`: `created` or `changed`).
function changed(task) {
  const tr = findRow(task.taskId);
  if (tr) {
    fillRow(tr, task);
    tr.classList.remove('changed');
    void tr.offsetWidth;
    tr.classList.add('changed');
  } else if (state.cursors.length === 1 && matches(task)) {
    // A new task, or one this page does not show yet: read the page again, once things
    // settle (one read for a burst of creations).
    later('page', 300, loadPage);
  }
  if (task.taskId === state.selected) {
    later('detail', 200, () => { if (state.selected) showTask(state.selected); });
  }
  refreshCounts();
}

// The event stream, read with fetch (EventSource cannot send the Authorization header).
async function startStream() {
  if (state.stream) state.stream.abort();
  const abort = new AbortController();
  state.stream = abort;
  try {
    const response = await fetch('/api/events', {
      headers: { Authorization: 'Bearer ' + state.token, Accept: 'text/event-stream' },
      signal: abort.signal,
      cache: 'no-store',
    });
    if (response.status === 401) return signOut('The admin token was refused.');
    if (!response.ok || !response.body) throw new Error('HTTP ' + response.status);
    setLive('live', true);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = 'message';
        const data = [];
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) name = line.slice(6).trim();
          else if (line.startsWith('data:')) data.push(line.slice(5).trimStart());
        }
        if (name === 'task' && data.length) changed(JSON.parse(data.join('\n')));
        else if (name === 'lagged') { loadPage(); refreshCounts(); }
      }
    }
  } catch (err) {
    if (abort.signal.aborted) return;
  }
  if (state.stream !== abort || !state.token) return;
  setLive('reconnecting…', false);
  setTimeout(() => { if (state.stream === abort && state.token) { startStream(); loadPage(); } }, 2000);
}

// One task's panel and its actions.
// Shows task `id` in the panel; an answer for a task no longer selected is dropped.
async function showTask(id) {
  const opening = state.selected !== id || $('detail').hidden;
  state.selected = id;
  const seq = ++state.detailSeq;
  for (const tr of $('tasks').tBodies[0].rows) tr.classList.toggle('selected', tr.dataset.id === id);
  let task;
  try {
    task = await api('/api/tasks/' + encodeURIComponent(id));
  } catch (err) {
    if (err.status === 404 && state.selected === id) {
      $('act-result').textContent = 'Task ' + id + ' is no longer stored.';
    }
    return;
  }
  if (state.selected !== id || seq !== state.detailSeq) return;
  const fields = $('detail-fields');
  fields.replaceChildren();
  const add = (name, value) => {
    if (value === null || value === undefined || value === '') return;
    fields.append(el('dt', name), el('dd', value));
  };
  add('Task', task.taskId);
  add('Owner', task.owner === null ? '(anonymous)' : task.owner);
  add('Status', task.status);
  add('Message', task.statusMessage);
  add('Tool', task.tool);
  add('Created', localTime(task.createdAt));
  add('Updated', localTime(task.lastUpdatedAt));
  add('Attempt', task.attempt ? task.attempt + ' of ' + task.maxAttempts : null);
  add('Lease holder', task.leaseHolder);
  add('Leased until', task.leasedUntil && localTime(task.leasedUntil));
  add('Trace', task.traceId);
  $('detail-json').textContent = JSON.stringify(task.task, null, 2);
  const finished = TERMINAL.has(task.status);
  $('act-cancel').disabled = finished;
  $('act-fail').disabled = finished;
  $('act-hand-over').disabled = finished || !task.leaseHolder;
  $('detail').hidden = false;
  if (opening) {
    $('act-result').textContent = '';
    $('detail-title').focus();
  }
}

const ACTIONS = {
  cancel: { label: 'Cancel', text: 'Cancel task' },
  fail: { label: 'Fail', text: 'Fail task' },
  'hand-over': { label: 'Hand over', text: 'Hand over the lease of task' },
};

// The confirmation dialog: `run` (given the reason, when one is asked for) once confirmed.
function ask({ title, text, reason, yes, no }, run) {
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  $('reason-row').hidden = !reason;
  $('reason').value = '';
  $('reason').required = !!reason;
  $('confirm-yes').textContent = yes || 'Confirm';
  $('confirm-no').textContent = no || 'Go back';
  state.pending = { run, reason: !!reason };
  $('confirm').showModal();
  (reason ? $('reason') : $('confirm-no')).focus();
}

function confirmed() {
  const pending = state.pending;
  if (!pending) return;
  const reason = $('reason').value.trim();
  if (pending.reason && !reason) {
    $('reason').focus();
    return;
  }
  state.pending = null;
  $('confirm').close();
  pending.run(reason);
}

function confirmAction(action) {
  const id = state.selected;
  ask({
    title: ACTIONS[action].label + '?',
    text: ACTIONS[action].text + ' ' + id + '? This cannot be undone.',
    reason: action === 'fail',
    yes: ACTIONS[action].label,
    no: 'Keep the task',
  }, (reason) => taskAction(action, id, reason));
}

async function taskAction(action, id, reason) {
  const body = action === 'fail' ? { reason } : {};
  try {
    const record = await api('/api/tasks/' + encodeURIComponent(id) + '/' + action, {
      method: 'POST',
      body: JSON.stringify(body),
    });
    $('act-result').textContent = 'Done: ' + record.action + ' by ' + record.actor + ', ' +
      record.from + ' → ' + record.to + '.';
  } catch (err) {
    const found = err.body && err.body.status ? ' (it is ' + err.body.status + ')' : '';
    $('act-result').textContent = 'Not done: ' + err.message + found;
  }
  if (state.selected === id) showTask(id);
  const tr = findRow(id);
  if (tr) api('/api/tasks/' + encodeURIComponent(id)).then((t) => fillRow(tr, t)).catch(() => {});
  refreshCounts();
}

function wire() {
  $('login-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const token = $('token').value.trim();
    if (token) signIn(token);
  });
  $('sign-out').addEventListener('click', () => signOut(''));
  $('filters').addEventListener('submit', (event) => {
    event.preventDefault();
    state.filters = {
      status: $('filter-status').value,
      tool: $('filter-tool').value.trim(),
      owner: $('filter-owner').value.trim(),
    };
    state.cursors = [null];
    loadPage();
  });
  $('next').addEventListener('click', () => {
    if (!state.next) return;
    state.cursors.push(state.next);
    loadPage();
  });
  $('prev').addEventListener('click', () => {
    if (state.cursors.length > 1) state.cursors.pop();
    loadPage();
  });
  for (const action of Object.keys(ACTIONS)) {
    $('act-' + action).addEventListener('click', () => confirmAction(action));
  }
  $('detail-close').addEventListener('click', () => {
    $('detail').hidden = true;
    state.selected = null;
  });
  $('confirm-yes').addEventListener('click', confirmed);
  $('confirm-no').addEventListener('click', () => $('confirm').close());
  $('confirm').addEventListener('close', () => { state.pending = null; });
  $('purge-form').addEventListener('submit', (event) => {
    event.preventDefault();
    purge();
  });
  $('reason').addEventListener('keydown', (event) => {
    if (event.key === 'Enter') { event.preventDefault(); confirmed(); }
  });
  $('detail-title').tabIndex = -1;
  setInterval(tickOldest, 1000);
  setInterval(() => {
    if (state.token && !$('app').hidden && state.cursors.length === 1 &&
        document.visibilityState === 'visible') loadPage();
  }, FALLBACK_MS);
  setInterval(() => { if (state.token && !$('app').hidden) refreshCounts(); }, 15000);
  if (state.token) signIn(state.token);
  else $('token').focus();
}

wire();
