// Parameter components (the core's parameters_by_component keys) in words.
const COMPONENT_LABELS = {
  token_embedding: 'Token embedding',
  position_embedding: 'Position embedding',
  token_type_embedding: 'Token-type embedding',
  embedding_norm: 'Embedding norm',
  attention: 'Attention',
  mlp: 'MLP',
  router: 'Router',
  experts: 'Experts',
  shared_experts: 'Shared experts',
  block_norms: 'Block norms',
  final_norm: 'Final norm',
  head: 'Output head',
  pooler: 'Pooler',
};
export const componentLabel = (key) => COMPONENT_LABELS[key] ?? key.replace(/_/g, ' ');
