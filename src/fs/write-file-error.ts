// The coded errors of write_file (docs/write-file.md). The http layer maps `code` and `status` to the error
// body; `field` names the query parameter at fault.

export type WriteFileErrorCode = 'invalid_input' | 'forbidden' | 'payload_too_large' | 'internal_error' | 'bad_request';

export class WriteFileError extends Error {
  override name = 'WriteFileError';

  constructor(
    readonly code: WriteFileErrorCode,
    readonly status: 400 | 403 | 408 | 409 | 413 | 500,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }

  /** 400: a bad path or mode, or a destination write_file never replaces. */
  static invalid(field: 'path' | 'mode', message: string): WriteFileError {
    return new WriteFileError('invalid_input', 400, `${field} ${message}`, field);
  }

  /** 409: the path or one of its parents is a directory where a file is needed, or the reverse. */
  static conflict(message: string): WriteFileError {
    return new WriteFileError('invalid_input', 409, message, 'path');
  }

  /** 403: outside --fs-allow, or the system denies the agent the write or the mode. */
  static forbidden(field: 'path' | 'mode', message: string): WriteFileError {
    return new WriteFileError('forbidden', 403, message, field);
  }

  static tooLarge(limit: number): WriteFileError {
    return new WriteFileError('payload_too_large', 413, `the file is larger than the ${limit}-byte upload limit`);
  }

  /** The upload stopped before its end (the client went away). */
  static aborted(): WriteFileError {
    return new WriteFileError('bad_request', 400, 'the upload was aborted before its end');
  }

  /** 408: the client sent nothing of the body for `idleMs`. */
  static idle(idleMs: number): WriteFileError {
    return new WriteFileError('bad_request', 408, `the upload sent nothing for ${idleMs} ms and was dropped`);
  }

  static io(message: string): WriteFileError {
    return new WriteFileError('internal_error', 500, message);
  }
}

/** A failed system call (or a failed body) as the coded error of write_file; `where` is a path. */
export function toWriteFileError(err: unknown, where: string): WriteFileError {
  if (err instanceof WriteFileError) return err;
  const e = err as NodeJS.ErrnoException;
  if (e?.code === 'ECONNRESET' || e?.code === 'ERR_STREAM_PREMATURE_CLOSE' || e?.message === 'aborted') return WriteFileError.aborted();
  switch (e?.code) {
    case 'EISDIR':
      return WriteFileError.conflict(`${where} is a directory`);
    case 'ENOTDIR':
      return WriteFileError.conflict(`a parent of ${where} is not a directory`);
    // Only reachable once symbolic links are resolved: parseWriteTarget checks the lengths.
    case 'ENAMETOOLONG':
      return WriteFileError.invalid('path', `is too long once symbolic links are resolved (${where})`);
    case 'ELOOP':
      return WriteFileError.invalid('path', `has too many levels of symbolic links (${where})`);
    // The agent's user, or the unit's read-only file system (deploy/), does not allow it.
    case 'EACCES':
    case 'EPERM':
    case 'EROFS':
      return WriteFileError.forbidden('path', `the agent may not write ${where} (${e.code})`);
  }
  return WriteFileError.io(`could not write ${where}: ${e?.code ?? e?.message ?? 'I/O error'}`);
}
