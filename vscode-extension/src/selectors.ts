/**
 * Which documents the client sends to the server, and where the status item shows.
 *
 * CUDA files, and Python files: a `.py` that holds CUDA in a `load_inline(...)` string (KernelBench's `ModelNew`)
 * is analysed as its CUDA strings, positions mapped back into the `.py`. The server reads a Python document only
 * when it holds `load_inline` and a `__global__` kernel, so sending every Python file costs a substring search.
 * This module imports nothing from `vscode`, so the unit tests can read it.
 */

export interface DocumentFilter {
  scheme: string;
  language: string;
}

const CUDA_LANGUAGES = ["cuda-cpp", "cuda"];
const SCHEMES = ["file", "untitled"];

/** The CUDA documents (the language status item shows on these). */
export const CUDA_SELECTOR: DocumentFilter[] = SCHEMES.flatMap((scheme) =>
  CUDA_LANGUAGES.map((language) => ({ scheme, language })),
);

/** Every document the server analyses: CUDA, and Python files that may hold `load_inline` CUDA. */
export const DOCUMENT_SELECTOR: DocumentFilter[] = [
  ...CUDA_SELECTOR,
  ...SCHEMES.map((scheme) => ({ scheme, language: "python" })),
];
