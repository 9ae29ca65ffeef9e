export function readText(path: string): string;
export function exists(path: string): boolean;
export function markdownFiles(): string[];
export function loadCommonJs(path: string): unknown;
export function tutorialBlocks(text: string): string[];
export function sourceFiles(folder: string): string[];
