// typedoc plugin for `npm run docs:api` (typedoc.json): keeps the generated API reference to what
// a user can import from 'metal-tensorops' and call. It works on the objects typedoc hands it, so
// it imports nothing.
//
// - Tensor's and QuantizedTensor's symbol-keyed members (the internal native handle, and the
//   dispose method that `using` calls) reach typedoc as one index signature `[key: symbol]`:
//   left out.
// - Device implements TensorOwner, an interface lib/index.ts does not export: not listed.
// - Operand, the type of linear's and attention's operands, is not exported: shown as what it is,
//   Tensor | QuantizedTensor.
export function load(app) {
  app.converter.on(app.converter.constructor.EVENT_RESOLVE_END, (context) => {
    const project = context.project;
    const exported = (name) => {
      const r = project.getChildByName(name);
      if (!r) throw new Error(`typedoc-public-api: lib/index.ts no longer exports ${name}`);
      return r;
    };
    const unionOf = exported('TypedData').type;  // an exported union: its class makes new ones
    if (unionOf?.type !== 'union') throw new Error('typedoc-public-api: TypedData is no longer a union');
    for (const refl of Object.values(project.reflections)) {
      if (refl.indexSignatures) {
        for (const s of refl.indexSignatures) project.removeReflection(s);
        delete refl.indexSignatures;
      }
      if (refl.implementedTypes) {
        refl.implementedTypes = refl.implementedTypes.filter((t) => t.reflection);
        if (!refl.implementedTypes.length) delete refl.implementedTypes;
      }
      if (refl.implementationOf && !refl.implementationOf.reflection) delete refl.implementationOf;
      const t = refl.type;
      if (t?.type === 'reference' && t.name === 'Operand' && !t.reflection) {
        const Ref = t.constructor;
        refl.type = new unionOf.constructor([
          Ref.createResolvedReference('Tensor', exported('Tensor'), project),
          Ref.createResolvedReference('QuantizedTensor', exported('QuantizedTensor'), project),
        ]);
      }
    }
  });
}
