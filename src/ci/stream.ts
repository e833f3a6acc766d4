// The shape of what a test runner's reporter told patchgate over its channel (tests, collect
// errors, modules, tripwires), on its own floor (issue 22): ./channel.ts parses it and
// ./node-order.ts merges per-file streams, and neither needs to import the other for it.

import type { TestResult } from './reports.js';

export interface StreamTest {
  id: string;
  status: TestResult['status'];
  /** node:test: the test file, relative to the sealed tree. */
  file?: string;
  /** The id before repeats are numbered ("name" of "name #2"). */
  name?: string;
  /** node:test: file, name and occurrence in the file; the same whatever order the files ran in. */
  key?: string;
}

export interface Stream {
  started: boolean;
  ended: boolean;
  exitstatus: number | null;
  collected: string[];
  collectErrors: string[];
  tests: StreamTest[];
  problems: string[];
  /** pytest: where each top-level module was imported from (name -> file). */
  modules: Record<string, string>;
  /** Tripwires that fired (the pytest plugin's audit hook and snapshot; the node preload). */
  tampers: Tamper[];
}

export interface Tamper {
  event: string;
  file: string;
  line: number;
  detail: string;
}
