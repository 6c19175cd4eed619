// Progressive enhancement only: every page works without this file.
"use strict";
(function () {
  // Check edited arguments before sending; the server checks them again.
  var form = document.getElementById("answer");
  if (form) {
    form.addEventListener("submit", function (event) {
      var problem = null;
      // A whole answer typed as JSON must parse; the server checks it (and its schema) again.
      var whole = form.querySelector("textarea[name=whole]");
      var asJson = form.querySelector("input[name=whole_as][value=json]");
      if (event.submitter && event.submitter.value === "whole" && asJson && asJson.checked) {
        try { JSON.parse(whole.value); } catch (e) { problem = "answer: not valid JSON"; }
      }
      form.querySelectorAll("input[data-kind=json]").forEach(function (input) {
        try { JSON.parse(input.value); } catch (e) {
          var name = input.name.replace(/^action\.(\d+)\.arg\./, "actions[$1].").replace(/^arg\./, "");
          problem = problem || (name + ": not valid JSON");
        }
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
