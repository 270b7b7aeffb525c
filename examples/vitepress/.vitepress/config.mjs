// VitePress: load memfit's component and let Vue leave <memfit-estimate> to the browser.
export default {
  title: 'Training notes',
  head: [['script', { type: 'module', src: 'https://memfit.example/memfit-estimate.js' }]],
  vue: { template: { compilerOptions: { isCustomElement: (tag) => tag === 'memfit-estimate' } } },
};
