export { type Clock, type EmbeddedServer, type EmbeddedServerOptions, startEmbeddedServer } from './server.js';
