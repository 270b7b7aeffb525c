// The part of a Docusaurus config that memfit needs: its web component as a module script.
export default {
  title: 'Training notes',
  url: 'https://docs.example',
  baseUrl: '/',
  scripts: [{ src: 'https://memfit.example/memfit-estimate.js', type: 'module' }],
  presets: [['classic', { docs: { routeBasePath: '/' } }]],
};
