// The two contract formats a Python parse is made for ('seed', 'v1'), on its own floor (issue
// 22) so that ./parse.ts and ./annotations.ts both name it without importing each other.

export type Scope = 'seed' | 'v1';
