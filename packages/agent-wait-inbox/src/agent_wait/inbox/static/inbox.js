// Progressive enhancement only: every page works without this file.
"use strict";
(function () {
  // Check edited arguments before sending; the server checks them again.
  var form = document.getElementById("answer");
  if (form) {
    form.addEventListener("submit", function (event) {
      var problem = null;
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
