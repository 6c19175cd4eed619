// Progressive enhancement only: every page works without this file.
"use strict";
(function () {
  function jsonProblem(input, name) {
    try { JSON.parse(input.value); return null; } catch (e) { return name + ": not valid JSON"; }
  }
  // Check edited arguments before sending; the server checks them again.
  var form = document.getElementById("answer");
  if (form && form.classList.contains("many")) {
    // A thread's questions answered together: check only the ones chosen to be sent.
    form.querySelectorAll("fieldset.question").forEach(function (question) {
      // Typing an answer chooses to send it: the decisions, the typed answer, approve with edits.
      function choose(value) {
        var radio = question.querySelector("input[name$='.send'][value='" + value + "']");
        var open = question.querySelector("input[name$='.send'][value='']");
        if (radio && open && open.checked) { radio.checked = true; }
      }
      question.querySelectorAll("input[name*='.decision']").forEach(function (input) {
        input.addEventListener("change", function () { choose("decisions"); });
      });
      question.querySelectorAll("textarea[name$='.whole']").forEach(function (input) {
        input.addEventListener("input", function () { choose("whole"); });
      });
      question.querySelectorAll("input[data-kind]").forEach(function (input) {
        if (!/^q\.\d+\.arg\./.test(input.name)) { return; }
        input.addEventListener("input", function () { choose("action:approve"); });
      });
    });
    form.addEventListener("submit", function (event) {
      var problem = null;
      form.querySelectorAll("fieldset.question").forEach(function (question) {
        var chosen = question.querySelector("input[name$='.send']:checked");
        if (problem || !chosen || !chosen.value) { return; }
        var where = "question " + question.dataset.question;
        var asJson = question.querySelector("input[name$='.whole_as'][value=json]");
        if (chosen.value === "whole" && asJson && asJson.checked) {
          problem = jsonProblem(question.querySelector("textarea[name$='.whole']"), where + ": answer");
        }
        question.querySelectorAll("input[data-kind=json]").forEach(function (input) {
          // Named as the server names them: args.amount, actions[0].args.to.
          var name = input.name.replace(/^q\.\d+\./, "")
            .replace(/^action\.(\d+)\.arg\./, "actions[$1].args.").replace(/^arg\./, "args.");
          problem = problem || jsonProblem(input, where + ": " + name);
        });
      });
      var error = document.getElementById("form-error");
      if (problem) {
        event.preventDefault();
        error.textContent = problem;
        error.hidden = false;
      }
    });
  } else if (form) {
    form.addEventListener("submit", function (event) {
      var problem = null;
      // A whole answer typed as JSON must parse; the server checks it (and its schema) again.
      var whole = form.querySelector("textarea[name=whole]");
      var asJson = form.querySelector("input[name=whole_as][value=json]");
      if (event.submitter && event.submitter.value === "whole" && asJson && asJson.checked) {
        problem = jsonProblem(whole, "answer");
      }
      form.querySelectorAll("input[data-kind=json]").forEach(function (input) {
        var name = input.name.replace(/^action\.(\d+)\.arg\./, "actions[$1].").replace(/^arg\./, "");
        problem = problem || jsonProblem(input, name);
      });
      var error = document.getElementById("form-error");
      if (problem) {
        event.preventDefault();
        error.textContent = problem;
        error.hidden = false;
      }
    });
  }
  // Deadlines in the reader's own time: "14:00 UTC" becomes "15:00 your time" (UTC on hover).
  document.querySelectorAll("[data-utc]").forEach(function (time) {
    var moment = new Date(time.dataset.utc);
    if (isNaN(moment.getTime())) { return; }
    var clock = moment.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
    var today = moment.toDateString() === new Date().toDateString();
    var day = today ? "" : moment.toLocaleDateString([], { month: "short", day: "numeric" }) + ", ";
    time.textContent = day + clock + " your time";
  });

  // Keys: j/k move through the list, Enter opens, a/r approve or reject after a confirmation.
  // On a question's page, a/r press its approve or reject button, after the same confirmation.
  function typing(event) {
    var target = event.target;
    return event.ctrlKey || event.metaKey || event.altKey ||
      (target && (/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || target.isContentEditable));
  }
  var VERBS = { a: "approve", r: "reject" };
  var sending = false;  // an answer from a key press is on its way
  var rows = Array.prototype.slice.call(document.querySelectorAll("table.questions tr.row[data-question]"));
  var result = document.getElementById("key-result");
  var selected = -1;
  function select(index) {
    if (!rows.length) { return; }
    index = Math.max(0, Math.min(rows.length - 1, index));
    if (selected >= 0) { rows[selected].classList.remove("selected"); rows[selected].removeAttribute("aria-current"); }
    selected = index;
    rows[index].classList.add("selected");
    rows[index].setAttribute("aria-current", "true");
    var link = rows[index].querySelector("a.summary");
    if (link) { link.focus(); }
  }
  function say(text) { if (result) { result.textContent = text; } }
  function answerRow(row, action) {
    var allowed = (row.dataset.actions || "").split(" ");
    if (allowed.indexOf(action) < 0) {
      say("This question cannot be answered " + action + " from the list: open it to answer.");
      return;
    }
    var summary = row.querySelector("a.summary").textContent;
    if (!window.confirm(action.charAt(0).toUpperCase() + action.slice(1) + " " + summary + "?")) { return; }
    var url = document.body.dataset.root + "/api/questions/" + encodeURIComponent(row.dataset.question) +
      "/answer?thread=" + encodeURIComponent(row.dataset.thread);
    // No live reload while this answer is on its way: the page reloads itself once it is sent.
    sending = true;
    fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRF-Token": document.body.dataset.csrf },
      body: JSON.stringify({ action: action })
    }).then(function (response) {
      return response.json().then(function (body) {
        if (response.ok) {
          // Said again after the reload, which shows the list without the answered question.
          window.sessionStorage.setItem("agent-wait-said", "Sent: " + action + " " + summary + ".");
          window.location.reload();
        } else {
          sending = false;
          say("Not sent: " + (body.error || response.status) + ".");
        }
      });
    }).catch(function () {
      sending = false;
      say("Not sent: the inbox did not answer; try again.");
    });
  }
  var said = window.sessionStorage.getItem("agent-wait-said");
  if (said) {
    window.sessionStorage.removeItem("agent-wait-said");
    say(said);
  }
  var keys = document.getElementById("keys");
  if (keys && rows.length) { keys.hidden = false; }
  document.addEventListener("keydown", function (event) {
    if (typing(event)) { return; }
    if (rows.length) {
      if (event.key === "j") { select(selected + 1); event.preventDefault(); }
      else if (event.key === "k") { select(selected < 0 ? 0 : selected - 1); event.preventDefault(); }
      else if (event.key === "Enter" && selected >= 0 && document.activeElement === document.body) {
        rows[selected].querySelector("a.summary").click();
      } else if (VERBS[event.key] && selected >= 0) {
        event.preventDefault();
        answerRow(rows[selected], VERBS[event.key]);
      }
      return;
    }
    if (VERBS[event.key] && form && !form.classList.contains("many")) {
      var button = form.querySelector("button[name=action][value=" + VERBS[event.key] + "]");
      if (!button) { return; }
      event.preventDefault();
      if (window.confirm(VERBS[event.key].charAt(0).toUpperCase() + VERBS[event.key].slice(1) + " this question?")) {
        button.click();
      }
    }
  });

  // Live updates: the list reloads itself; a question page says when it changed elsewhere.
  var live = document.querySelector("[data-live]");
  if (!live || !window.EventSource) { return; }
  // "since" is the state this page shows: a change made while it loaded is not missed.
  var source = new EventSource(
    document.body.dataset.root + "/events?since=" + encodeURIComponent(live.dataset.marker || ""));
  source.addEventListener("changed", function () {
    if (sending) { return; }
    if (live.dataset.live === "list") {
      window.location.reload();
    } else {
      document.getElementById("live").hidden = false;
    }
  });
})();
