// The rule registry, in the order the policy runs them. The order is the method: without
// the ref rule and the write-block first, the later layers could be moved by the agent.
// Before all of them, alone, the size limits (PRE_RULES): a pack bomb is refused before any
// rule reads a blob of it.

import type { Rule, RuleId } from '../types.js';
import { refs } from './refs.js';
import { writeBlock } from './write-block.js';
import { contract } from './contract.js';
import { fixtures } from './fixtures.js';
import { ledger } from './ledger.js';
import { limits } from './limits.js';
import { tamperScan } from './tamper-scan.js';
import { policyFiles } from './policy.js';

export const PRE_RULES = [limits] as const satisfies readonly Rule[];

// `policy` before the rules that read the policy's files (a lock that does not parse is its finding, not their error).
export const RULES = [refs, writeBlock, policyFiles, contract, fixtures, tamperScan, ledger] as const satisfies readonly Rule[];

export const RULE_IDS: readonly RuleId[] = [...PRE_RULES, ...RULES].map((r) => r.id);
