// docs.js draws the API reference at /docs from /openapi.yaml with the
// vendored Redoc (static/vendor/README.md).
import { init } from "/static/vendor/redoc-3.0.1.standalone.js";

init("/openapi.yaml", { hideDownloadButton: false, expandResponses: "200" }, document.getElementById("redoc"));
