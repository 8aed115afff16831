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

// A base's page while it syncs: the status line follows the job; the page reloads once it ends.
function followSync() {
  const line = document.querySelector("#sync-status[data-sync-url]");
  if (!line) return;
  const poll = async () => {
    try {
      const answer = await fetch(line.dataset.syncUrl, {headers: {Accept: "application/json"}});
      if (answer.ok) {
        const job = await answer.json();
        line.textContent = job.text;
        const soFar = document.getElementById("documents-so-far");
        if (soFar && job.index && job.index.documents) {
          soFar.textContent = `${job.index.documents} document(s) searchable so far: reload the page to list them.`;
        }
        if (!job.active) { window.location.reload(); return; }
      }
    } catch (e) { /* the server is away for a moment: try again */ }
    setTimeout(poll, 1500);
  };
  setTimeout(poll, 1500);
}
document.addEventListener("DOMContentLoaded", followSync);
