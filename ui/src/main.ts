import { appInfo } from "./api";

const status = document.getElementById("status");

appInfo()
  .then((info) => {
    if (status) status.textContent = `Quarry ${info.version} reads: ${info.formats.join(", ")}`;
  })
  .catch((error: unknown) => {
    if (status) status.textContent = `Backend unavailable: ${String(error)}`;
  });
