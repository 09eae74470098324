export { type Clock, DataDirectoryError, type EmbeddedServer, type EmbeddedServerOptions, startEmbeddedServer } from './server.js';
