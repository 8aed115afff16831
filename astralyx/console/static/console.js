// Small progressive enhancements; every form also works without this file.
document.addEventListener("submit", (event) => {
  // A form with data-confirm asks first (delete, forget, undo when changed).
  const message = event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});

// Tools tab: say what "Save on its own" means as soon as it is chosen.
function showOwnWarnings() {
  for (const fieldset of document.querySelectorAll("fieldset.approval")) {
    const own = fieldset.querySelector("[data-own]");
    const save = fieldset.closest("form").querySelector("[data-save]");
    const warning = fieldset.querySelector(".own-warning");
    if (warning) warning.hidden = !(own && own.checked && save && save.checked);
  }
}
document.addEventListener("change", showOwnWarnings);
document.addEventListener("DOMContentLoaded", showOwnWarnings);
