// The typed arrays reads copy into. They are allocated here, in JavaScript, because a failed
// allocation is then a RangeError we can answer with E_OOM; the same allocation made by the addon
// (napi_create_arraybuffer) ends the whole process when memory is exhausted.
import { TensorOpsError } from './errors';

type TypedArrayConstructor<T> = { new (length: number): T; readonly BYTES_PER_ELEMENT: number };

/** A new zeroed T of `length` elements, or E_OOM naming `what` when memory cannot be had. */
export function allocateArray<T>(ctor: TypedArrayConstructor<T>, length: number, what: string): T {
  try {
    return new ctor(length);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    throw new TensorOpsError(
      'E_OOM',
      `could not allocate ${length * ctor.BYTES_PER_ELEMENT} bytes for ${what}: ${err.message}`,
      { cause: err },
    );
  }
}
