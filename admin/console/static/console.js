// The console's only script: a form (or the button that submits it) with a
// data-confirm attribute asks before it is sent. Everything else works without it.
"use strict";
document.addEventListener("submit", function (e) {
  var el = e.submitter && e.submitter.hasAttribute("data-confirm") ? e.submitter : e.target;
  var question = el.getAttribute("data-confirm");
  if (question && !window.confirm(question)) {
    e.preventDefault();
  }
});
