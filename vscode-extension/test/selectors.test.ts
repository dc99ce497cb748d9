import assert from "node:assert/strict";
import { test } from "node:test";
import { CUDA_SELECTOR, DOCUMENT_SELECTOR } from "../src/selectors";

test("Python documents (load_inline CUDA) go to the server, saved and untitled", () => {
  assert.ok(DOCUMENT_SELECTOR.some((f) => f.language === "python" && f.scheme === "file"));
  assert.ok(DOCUMENT_SELECTOR.some((f) => f.language === "python" && f.scheme === "untitled"));
});

test("CUDA documents still go to the server, and the status item shows on CUDA only", () => {
  for (const language of ["cuda-cpp", "cuda"]) {
    assert.ok(DOCUMENT_SELECTOR.some((f) => f.language === language && f.scheme === "file"));
  }
  assert.ok(CUDA_SELECTOR.every((f) => f.language !== "python"));
  assert.equal(CUDA_SELECTOR.length, 4);
});
