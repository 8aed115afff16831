// Small progressive enhancements; every form also works without this file.
document.addEventListener("submit", (event) => {
  // A form with data-confirm asks first (delete, forget, undo when changed).
  const message = event.target.dataset.confirm;
  if (message && !window.confirm(message)) event.preventDefault();
});
