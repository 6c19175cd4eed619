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
  // Live updates: the list reloads itself; a question page says when it changed elsewhere.
  var live = document.querySelector("[data-live]");
  if (!live || !window.EventSource) { return; }
  // "since" is the state this page shows: a change made while it loaded is not missed.
  var source = new EventSource(
    document.body.dataset.root + "/events?since=" + encodeURIComponent(live.dataset.marker || ""));
  source.addEventListener("changed", function () {
    if (live.dataset.live === "list") {
      window.location.reload();
    } else {
      document.getElementById("live").hidden = false;
    }
  });
})();
