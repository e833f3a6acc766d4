import t from 'tap';
import { GitError } from '../src/errors.js';
t.test('x', async t => { const e = new GitError(['a'], 1, 'boom\n'); t.equal(e.code, 'GIT'); t.match(e.message, /boom/); });
